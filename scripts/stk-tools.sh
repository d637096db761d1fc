# Sourced by the scripts that measure on SuperTuxKart's data (stk-build-bench.sh,
# stk-store-check.sh), from the repository's root: checks the data is installed and sets STK,
# ODRPACK and ODR (release builds unless ODRPACK, and ODR, are given).
STK=${STK:-/usr/share/games/supertuxkart/data}
[ -d "$STK" ] || { echo "no $STK: apt-get install -y supertuxkart-data"; exit 1; }
if [ -z "${ODRPACK:-}" ]; then
  swift build -c release --product odrpack >/dev/null
  swift build -c release --product odr >/dev/null
  bin=$(swift build -c release --show-bin-path)
  ODRPACK=$bin/odrpack
  ODR=$bin/odr
fi
ODRPACK=$(realpath "$ODRPACK")
ODR=$(realpath "${ODR:-$(dirname "$ODRPACK")/odr}")
