#!/usr/bin/env bash
# Fails when a tracked file is an executable binary (ELF, Mach-O, PE), a symbolic link, or is
# larger than 1 MB, or carries merge conflict markers, unless scripts/tracked-allow.txt lists it: build outputs
# never belong in git. Run by make lint and .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
allow=scripts/tracked-allow.txt
limit=$((1024 * 1024))
bad=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  if [ -f "$allow" ] && grep -qxF -- "$f" "$allow"; then continue; fi
  size=$(stat -c %s -- "$f")
  if [ "$size" -gt "$limit" ]; then
    echo "tracked file over 1 MB: $f ($size bytes); list it in $allow if intended" >&2
    bad=1
  fi
  magic=$(head -c 4 -- "$f" | od -An -tx1 | tr -d ' \n')
  case "$magic" in
    7f454c46 | cffaedfe | cefaedfe | feedfacf | feedface | 4d5a*)
      echo "tracked executable binary: $f; build outputs belong in .gitignore" >&2
      bad=1 ;;
  esac
done < <(git ls-files -z)
# A symbolic link: a local shortcut (node_modules, an emulator cache) that
# points outside the clone.
while IFS= read -r line; do
  echo "tracked symbolic link: ${line#*	}; links to a machine's own paths do not belong in git" >&2
  bad=1
done < <(git ls-files -s | awk '$1 == "120000"')
# A merge that committed its conflict markers.
if git grep -n -I -E '^(<<<<<<< |>>>>>>> )' -- . >&2; then
  echo "tracked files carry merge conflict markers (above)" >&2
  bad=1
fi
exit "$bad"
