#!/usr/bin/env bash
# A Flink 2.3.0 standalone cluster on this machine, each process its own JVM, assembled from Maven
# Central (cluster/pom.xml: Flink's flink-dist jar is not published there) and started through
# Flink's own entrypoint classes the way Flink's bin/ scripts start them: the class path is lib/'s
# jars in sorted order, the JVM options come from conf/config.yaml (env.java.default-opts.all,
# env.java.opts.all and the process's own), the memory flags from Flink's BashJavaUtils.
#   scripts/cluster.sh assemble HOME     lay out HOME as a FLINK_HOME: lib/, opt/ (the planner jar,
#                                        the SQL Client and Gateway), conf/config.yaml (Flink's
#                                        defaults, free ports, checkpoints under HOME/checkpoints,
#                                        checkpoint statistics cached for 100 ms instead of 3 s),
#                                        conf/log4j.properties
#   scripts/cluster.sh start HOME [N]    a JobManager and N TaskManagers (default 1); returns once
#                                        all N registered
#   scripts/cluster.sh taskmanager HOME  one more TaskManager (e.g. after one was killed); the
#                                        environment variable TM_JAVA_OPTS adds JVM options to it
#   scripts/cluster.sh sql HOME FILE     the SQL Client (-f FILE) against the cluster; prints its output
#   scripts/cluster.sh rest-url HOME     prints the cluster's REST address (http://localhost:PORT)
#   scripts/cluster.sh stop HOME         kills every process started in HOME
# Logs: HOME/log/<process>.log (Flink's), HOME/log/<process>.out (stdout and stderr, appended); process ids:
# HOME/run/<process>.pid. scripts/cluster-test.sh is the test built on it (docs/install.md).
CALLER_DIR=$PWD
. "$(dirname "$0")/common.sh"

FLINK_VERSION=2.3.0
# Flink 2.3.0's conf/config.yaml sets these for JDK 17 (flink-dist's config.yaml)
JDK17_OPTS="--add-exports=java.base/sun.net.util=ALL-UNNAMED --add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED \
--add-exports=jdk.compiler/com.sun.tools.javac.api=ALL-UNNAMED --add-exports=jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED \
--add-exports=jdk.compiler/com.sun.tools.javac.parser=ALL-UNNAMED --add-exports=jdk.compiler/com.sun.tools.javac.tree=ALL-UNNAMED \
--add-exports=jdk.compiler/com.sun.tools.javac.util=ALL-UNNAMED --add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED \
--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.net=ALL-UNNAMED --add-opens=java.base/java.io=ALL-UNNAMED \
--add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
--add-opens=java.base/java.lang.reflect=ALL-UNNAMED --add-opens=java.base/java.text=ALL-UNNAMED \
--add-opens=java.base/java.time=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED \
--add-opens=java.base/java.util.concurrent=ALL-UNNAMED --add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED \
--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED"

die() { echo "cluster: $*" >&2; exit 1; }

# A port in 20000-59999 nothing listens on
free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 40000))
    (echo > "/dev/tcp/localhost/$port") 2>/dev/null || { echo "$port"; return; }
  done
}

cmd_assemble() {
  local home=$1
  mkdir -p "$home"/{lib,opt,conf,log,run,checkpoints,savepoints}
  log "FLINK_HOME $home from Maven Central (cluster/pom.xml)"
  local mvn=(mvn -B -q -f "$ROOT/cluster/pom.xml")
  [ -z "${MVN_OFFLINE:-}" ] || mvn+=(-o)
  "${mvn[@]}" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$home/lib" \
    -DexcludeArtifactIds=flink-table-planner_2.12,flink-sql-client,flink-sql-gateway
  "${mvn[@]}" dependency:copy-dependencies -DexcludeTransitive=true -DoutputDirectory="$home/opt" \
    -DincludeArtifactIds=flink-table-planner_2.12,flink-sql-client,flink-sql-gateway,flink-python
  cat > "$home/conf/config.yaml" <<EOF
# Flink 2.3.0's default conf/config.yaml, with this machine's free ports and local directories
env:
  java:
    opts:
      all: $JDK17_OPTS
jobmanager:
  bind-host: localhost
  rpc:
    address: localhost
    port: $(free_port)
  memory:
    process:
      size: 1024m
  execution:
    failover-strategy: region
taskmanager:
  bind-host: localhost
  host: localhost
  numberOfTaskSlots: 2
  memory:
    process:
      size: 1536m
parallelism:
  default: 2
rest:
  address: localhost
  bind-address: localhost
  port: $(free_port)
  # not Flink's default (3 s): the tests poll checkpoints in progress
  cache:
    checkpoint-statistics:
      timeout: 100 ms
execution:
  checkpointing:
    dir: file://$home/checkpoints
    savepoint-dir: file://$home/savepoints
EOF
  cat > "$home/conf/log4j.properties" <<'EOF'
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = MainAppender
appender.main.name = MainAppender
appender.main.type = File
appender.main.append = true
appender.main.fileName = ${sys:log.file}
appender.main.layout.type = PatternLayout
appender.main.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n
logger.pekko.name = org.apache.pekko
logger.pekko.level = WARN
EOF
}

classpath() { ls "$1"/lib/*.jar | sort | paste -sd: -; }

# BashJavaUtils COMMAND on HOME's configuration: its result lines, without their prefix
bash_java_utils() {
  local home=$1 command=$2
  shift 2
  java -cp "$(classpath "$home")" -Dlog4j2.level=WARN org.apache.flink.runtime.util.bash.BashJavaUtils \
    "$command" --configDir "$home/conf" "$@" 2>/dev/null | sed -n 's/^BASH_JAVA_UTILS_EXEC_RESULT://p'
}

# The value of a configuration key (flattened as Flink's config.sh reads it), or empty
config_value() {
  bash_java_utils "$1" UPDATE_AND_GET_FLINK_CONFIGURATION -flatten | sed -n "s/^$2: //p" | tail -n 1
}

rest_url() { echo "http://localhost:$(config_value "$1" rest.port)"; }

# Starts a Flink process in the background: launch HOME NAME ROLE MAIN [ARGS...]
launch() {
  local home=$1 name=$2 role=$3 main=$4
  shift 4
  local opts
  opts="$(config_value "$home" env.java.default-opts.all) $(config_value "$home" env.java.opts.all)"
  opts="$opts $(config_value "$home" env.java.opts.$role)"
  # shellcheck disable=SC2086  # the options are word lists, as Flink's scripts pass them
  nohup java $opts "$@" -Dlog.file="$home/log/$name.log" -Dlog4j.configurationFile="file:$home/conf/log4j.properties" \
    -classpath "$(classpath "$home")" "$main" --configDir "$home/conf" ${DYNAMIC:-} \
    >> "$home/log/$name.out" 2>&1 < /dev/null &
  echo $! > "$home/run/$name.pid"
}

registered_taskmanagers() {
  curl -sf "$(rest_url "$1")/taskmanagers" | grep -o '"id":"[^"]*"' | wc -l
}

cmd_taskmanager() {
  local home=$1 params n
  n=$(find "$home/run" -name 'taskmanager-*.pid' | wc -l)
  params=$(bash_java_utils "$home" GET_TM_RESOURCE_PARAMS)
  # shellcheck disable=SC2086
  DYNAMIC=$(echo "$params" | tail -n 1) launch "$home" "taskmanager-$((n + 1))" taskmanager \
    org.apache.flink.runtime.taskexecutor.TaskManagerRunner $(echo "$params" | tail -n 2 | head -n 1) ${TM_JAVA_OPTS:-}
  echo "taskmanager-$((n + 1))"
}

cmd_start() {
  local home=$1 count=${2:-1} params
  params=$(bash_java_utils "$home" GET_JM_RESOURCE_PARAMS)
  # shellcheck disable=SC2086
  DYNAMIC=$(echo "$params" | tail -n 1) launch "$home" jobmanager jobmanager \
    org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint $(echo "$params" | tail -n 2 | head -n 1)
  for _ in $(seq "$count"); do cmd_taskmanager "$home" > /dev/null; done
  wait_for "$count TaskManagers registered" 120 test "\$(registered_taskmanagers $home)" -ge "$count" ||
    { tail -n 30 "$home"/log/*.out >&2; die "the cluster in $home did not come up"; }
}

# wait_for WHAT SECONDS COMMAND...: polls COMMAND once a second
wait_for() {
  local what=$1 seconds=$2
  shift 2
  for _ in $(seq "$seconds"); do
    eval "$@" 2>/dev/null && return 0
    sleep 1
  done
  echo "cluster: waited $seconds s for $what" >&2
  return 1
}

cmd_sql() {
  local home=$1 file=$2 opts
  opts="$(config_value "$home" env.java.default-opts.all) $(config_value "$home" env.java.opts.all)"
  opts="$opts $(config_value "$home" env.java.opts.client)"
  # shellcheck disable=SC2086
  FLINK_CONF_DIR=$home/conf java $opts -Dlog.file="$home/log/sql-client.log" \
    -Dlog4j.configurationFile="file:$home/conf/log4j.properties" \
    -classpath "$(classpath "$home"):$(ls "$home"/opt/flink-{sql-client,sql-gateway,python}-$FLINK_VERSION.jar | paste -sd: -)" \
    org.apache.flink.table.client.SqlClient -f "$file" --jar "$home/opt/flink-sql-client-$FLINK_VERSION.jar"
}

cmd_stop() {
  local home=$1 pid
  for f in "$home"/run/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$f"
  done
}

cmd_rest-url() { rest_url "$1"; }

[ $# -ge 2 ] || die "usage: $0 assemble|start|taskmanager|sql|rest-url|stop HOME [ARGS]"
command=$1
home=$(cd "$CALLER_DIR" && realpath -m "$2")
shift 2
case $command in
  assemble|start|taskmanager|sql|rest-url|stop) "cmd_$command" "$home" "$@" ;;
  *) die "unknown command $command" ;;
esac
