#!/usr/bin/env bash
# Installs DynamoDB Local (the official jar, shipped in the npm package
# amplify-dynamodb-simulator) into infra/local/.cache/dynamodb without its
# ~350 MB of Amplify dependencies: npm pack fetches only the tarball, whose
# sha512 must match the integrity pinned in package.json.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest="$here/.cache/dynamodb"
[ -f "$dest/DynamoDBLocal.jar" ] && exit 0

read -r pkg version integrity < <(node -e '
  const d = require(process.argv[1]).herald.dynamodbLocal;
  console.log(d.package, d.version, d.integrity);' "$here/package.json")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$pkg@$version" >/dev/null)
tarball=$(ls "$tmp"/*.tgz)
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$actual" != "$integrity" ]; then
  echo "fetch-dynamodb: integrity mismatch for $pkg@$version" >&2
  echo "  want $integrity" >&2
  echo "  got  $actual" >&2
  exit 1
fi
mkdir -p "$tmp/x" "$dest"
tar -xzf "$tarball" -C "$tmp/x" package/emulator
cp -R "$tmp/x/package/emulator/." "$dest/"
echo "fetch-dynamodb: DynamoDB Local from $pkg@$version installed in $dest"
