#!/usr/bin/env bash
# The Python tools `make aws-check` and the local IAM check use: the SAM
# transform (aws-sam-translator, as `sam` uses it) and cfn-lint, at pinned
# versions. A python3 that already has exactly these is used as is (the
# README's prerequisite); otherwise they are installed into a virtualenv
# under .cache/python (git-ignored), which the Makefile and the local runner
# (internal/devstack/iam.Python) prefer when it exists.
set -euo pipefail
cd "$(dirname "$0")/../.."
SAM_VERSION=1.110.0
CFN_LINT_VERSION=1.51
VENV=.cache/python

has_pinned() {
	"$1" - "$SAM_VERSION" "$CFN_LINT_VERSION" <<'PY' 2>/dev/null
import sys
import samtranslator, cfnlint.version
ok = samtranslator.__version__ == sys.argv[1] and cfnlint.version.__version__.startswith(sys.argv[2] + ".")
sys.exit(0 if ok else 1)
PY
}

if [[ -x $VENV/bin/python3 ]] && has_pinned "$VENV/bin/python3"; then
	exit 0
fi
if has_pinned python3 && command -v cfn-lint >/dev/null; then
	exit 0
fi
echo "python tools: installing aws-sam-translator==$SAM_VERSION cfn-lint==$CFN_LINT_VERSION.* into $VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check "aws-sam-translator==$SAM_VERSION" "cfn-lint==$CFN_LINT_VERSION.*"
has_pinned "$VENV/bin/python3" || { echo "python tools: $VENV lacks the pinned versions" >&2; exit 1; }
