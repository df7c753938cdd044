#!/usr/bin/env bash
# Counts the core module's test methods by the plugin that runs them and prints the share that
# needs no database.
#
#   surefire: **/*Test.java except **/*IntegrationTest.java (root pom) - no database
#   failsafe: **/*IntegrationTest.java, except LeadershipMeasurementIntegrationTest (a measurement
#             program the measure-leadership profile runs, not a test) - real PostgreSQL
#
# A method counts once per annotation @Test, @ParameterizedTest, @RepeatedTest, @Property,
# @TestFactory or @TestTemplate (a parameterised test counts as one method, whatever its cases).
# An abstract contract base (a file whose name does not end in Test, e.g. ServerContractTests)
# counts once for every class run by a plugin that extends it, under that class's plugin.
#
# Usage: retsu-lock-core/scripts/test-share.sh [-v]   (-v lists every counted class)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)/src/test/java"
verbose="${1:-}"
annotations='^[[:space:]]*@(Test|ParameterizedTest|RepeatedTest|Property|TestFactory|TestTemplate)\b'

methods() { grep -cE "$annotations" "$1" || true; }

# Methods a class inherits from a base in the test tree (one level, as the contract bases are).
inherited() {
  local base
  base="$(grep -oE 'extends [A-Z][A-Za-z0-9_]*' "$1" | head -n1 | cut -d' ' -f2 || true)"
  [[ -z "$base" ]] && { echo 0; return; }
  local file
  file="$(find "$root" -name "$base.java" | head -n1)"
  [[ -z "$file" ]] && { echo 0; return; }
  methods "$file"
}

unit=0
db=0
while IFS= read -r f; do
  name="$(basename "$f" .java)"
  case "$name" in
    LeadershipMeasurementIntegrationTest) continue ;;
    *IntegrationTest) kind=failsafe ;;
    *Test) kind=surefire ;;
    *) continue ;;
  esac
  n=$(($(methods "$f") + $(inherited "$f")))
  [[ "$verbose" == -v ]] && printf '%-9s %4d  %s\n' "$kind" "$n" "${f#"$root"/}"
  if [[ "$kind" == surefire ]]; then unit=$((unit + n)); else db=$((db + n)); fi
done < <(find "$root" -name '*.java' | sort)

total=$((unit + db))
printf 'database-free (surefire, *Test):      %4d\n' "$unit"
printf 'database (failsafe, *IntegrationTest): %4d\n' "$db"
awk -v u="$unit" -v t="$total" 'BEGIN { printf "database-free share:                   %5.1f %% of %d\n", (t ? 100 * u / t : 0), t }'
