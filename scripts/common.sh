# Sourced by build.sh and scripts/*.sh: strict mode, the repository root as working directory,
# the output paths, logging and Maven.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
OUT=$ROOT/build
mkdir -p "$OUT"
export CGO_ENABLED=1

# The project version (the root pom.xml's <revision>) and the jars the reactor builds.
FERRY_VERSION=$("$ROOT/scripts/version.sh")
WRAPPER_JAR=$ROOT/jni/target/ferry-flink-$FERRY_VERSION.jar
# the ferry command (./ferry runs it with cli/target/classpath.txt); never part of a distribution
CLI_JAR=$ROOT/cli/target/ferry-cli-$FERRY_VERSION.jar
SHIM_JAR=$ROOT/shim/target/ferry-flink-shim.jar
# the wrapper with its Arrow relocated inside (dist/pom.xml), and what ./build.sh dist packs
DIST_JAR=$ROOT/dist/target/ferry-flink-$FERRY_VERSION.jar
DIST_DIR=$ROOT/dist/target/ferry-$FERRY_VERSION

# The JDK 17 module openings Flink's launch scripts pass (java.nio also for Arrow on the class
# path), for the JVMs the scripts start.
JDK17_OPENS=(
  --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.net=ALL-UNNAMED
  --add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED
  --add-opens=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens=java.base/java.text=ALL-UNNAMED --add-opens=java.base/java.time=ALL-UNNAMED
  --add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.util.concurrent=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED
)

log() { printf '\n== %s\n' "$*"; }

# Maven on the reactor of the root pom.xml (select modules with -pl, profiles with -P), online
# unless MVN_OFFLINE is set (for machines whose ~/.m2 already holds everything).
mvn_() {
  (cd "$ROOT" && mvn -B -q $( [ -n "${MVN_OFFLINE:-}" ] && echo -o ) "$@")
}
