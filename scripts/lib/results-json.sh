# shellcheck shell=bash disable=SC2034  # COLLBENCH_* state is shared with results.sh
# Writes run.json, the provenance file of a results folder: what ran, where,
# with which environment and library versions. Pure bash (no jq, no python)
# because compute nodes rarely have either. Sourced by scripts/lib/results.sh.
#
# run.json, version 1 (keys are added only at the end of an object):
#   run_json_version, experiment, launcher ("slurm" | "mpirun"), folder, host,
#   started_at, finished_at (null while running), exit_code (of the launch
#   command; null if it never returned), script_exit_code (null while
#   running), command (argv array), command_line (shell-quoted),
#   analysis_commands (argv arrays run after it), knobs (the COLLBENCH_*
#   settings as resolved: defaults, environment and script arguments),
#   slurm (every SLURM_* variable), env (NCCL_*, OMPI_*, PMIX_*, UCX_*, CUDA_*,
#   PMI_*, I_MPI_*, FI_*, LD_LIBRARY_PATH), modules (LOADEDMODULES), versions,
#   gpus (nvidia-smi -L), collbench_info (`collbench info --topology --json`:
#   on Slurm one rank on every node of the job, so its ranks and topology
#   describe each node; locally one rank; null when it failed, and then
#   collbench_info_error says why), files, collbench_info_command (its argv).

COLLBENCH_INFO_LAUNCH=()  # how `collbench info` is launched (empty: a singleton)
COLLBENCH_INFO_CMD=()

# A JSON string holding $1 (control characters escaped; bytes kept as they are).
results_json_str() {
    local s=$1 out="" c i
    s=${s//\\/\\\\}
    s=${s//\"/\\\"}
    s=${s//$'\n'/\\n}
    s=${s//$'\t'/\\t}
    s=${s//$'\r'/\\r}
    if [[ $s =~ [[:cntrl:]] ]]; then
        for ((i = 0; i < ${#s}; i++)); do
            c=${s:i:1}
            if [[ $c =~ [[:cntrl:]] ]]; then
                printf -v c '\\u%04x' "'$c"
            fi
            out+=$c
        done
        s=$out
    fi
    printf '"%s"' "$s"
}

# A JSON array of strings: the arguments.
results_json_array() {
    local first=1 a
    printf '['
    for a in "$@"; do
        [ $first = 1 ] || printf ', '
        first=0
        results_json_str "$a"
    done
    printf ']'
}

# A JSON object of the named variables that are set.
results_json_vars() {
    local first=1 name
    printf '{'
    for name in "$@"; do
        [ -n "${!name+set}" ] || continue
        [ $first = 1 ] || printf ','
        first=0
        printf '\n    %s: %s' "$(results_json_str "$name")" "$(results_json_str "${!name}")"
    done
    [ $first = 1 ] || printf '\n  '
    printf '}'
}

# A JSON object of the exported variables whose names match the regex $1.
results_json_env() {
    local first=1 name
    printf '{'
    while read -r name; do
        [[ $name =~ $1 ]] || continue
        [ $first = 1 ] || printf ','
        first=0
        printf '\n    %s: %s' "$(results_json_str "$name")" "$(results_json_str "${!name}")"
    done < <(compgen -e | LC_ALL=C sort)
    [ $first = 1 ] || printf '\n  '
    printf '}'
}

# "value" or null.
results_json_str_or_null() {
    if [ -n "$1" ]; then results_json_str "$1"; else printf 'null'; fi
}

# The first line a command prints, bounded to 30 s; empty if it fails.
_results_first_line() {
    command -v "$1" >/dev/null 2>&1 || return 0
    timeout 30 "$@" 2>/dev/null | sed -n '1p' || true
}

# Library and tool versions, as a JSON object.
_results_versions_json() {
    local os=""
    [ -r /etc/os-release ] && os=$(. /etc/os-release && echo "${PRETTY_NAME:-}")
    printf '{\n    "collbench": %s,' "$(results_json_str_or_null "$(_results_first_line "$COLLBENCH_BIN" --version)")"
    printf '\n    "collbench_analyze": %s,' "$(results_json_str_or_null "$(_results_first_line "$COLLBENCH_ANALYZE" --version)")"
    printf '\n    "srun": %s,' "$(results_json_str_or_null "$(_results_first_line srun --version)")"
    printf '\n    "mpirun": %s,' "$(results_json_str_or_null "$(_results_first_line mpirun --version)")"
    printf '\n    "nvidia_driver": %s,' "$(results_json_str_or_null "$(_results_first_line nvidia-smi --query-gpu=driver_version --format=csv,noheader)")"
    printf '\n    "kernel": %s,' "$(results_json_str_or_null "$(uname -r)")"
    printf '\n    "os": %s\n  }' "$(results_json_str_or_null "$os")"
}

# `nvidia-smi -L` of this host, as a JSON array (empty without GPUs).
_results_gpus_json() {
    local lines=()
    if command -v nvidia-smi >/dev/null 2>&1; then
        mapfile -t lines < <(timeout 30 nvidia-smi -L 2>/dev/null || true)
    fi
    results_json_array "${lines[@]}"
}

# `collbench info --topology --json`, once: launched by the command in
# COLLBENCH_INFO_LAUNCH (slurm-job.sh sets one rank per node of the job),
# else on this host as a one-rank MPI singleton. COLLBENCH_INFO=0 skips it
# (for an MPI whose singletons cannot start here).
_results_collect_info() {
    COLLBENCH_INFO_JSON=null
    COLLBENCH_INFO_ERROR=""
    COLLBENCH_INFO_CMD=("${COLLBENCH_INFO_LAUNCH[@]}" "$COLLBENCH_BIN" info --topology --json)
    if [ "${COLLBENCH_INFO:-1}" = 0 ]; then
        COLLBENCH_INFO_ERROR="skipped (COLLBENCH_INFO=0)"
        return 0
    fi
    local out err rc=0
    err=$(mktemp)
    out=$(timeout 120 "${COLLBENCH_INFO_CMD[@]}" 2>"$err" </dev/null) || rc=$?
    if [ $rc = 0 ] && [ "${out:0:1}" = "{" ]; then
        COLLBENCH_INFO_JSON=$(sed '2,$s/^/  /' <<<"$out")
    else
        # The launcher's error lines (srun names a task's signal there, e.g.
        # "task 1: Segmentation fault") and the last line, at most 4 lines.
        local why
        why=$( (grep -i -m 3 'error' "$err" || true; tail -n 1 "$err") |
            awk '!seen[$0]++ { printf "%s%s", (n++ ? " | " : ""), $0 }')
        COLLBENCH_INFO_ERROR="collbench info --json exited with $rc: ${why:-no error output}"
    fi
    rm -f "$err"
}

# Gathers what does not change during the run (versions, GPUs, collbench
# info); call once before the first results_write_run_json.
results_collect_provenance() {
    COLLBENCH_VERSIONS_JSON=$(_results_versions_json)
    COLLBENCH_GPUS_JSON=$(_results_gpus_json)
    _results_collect_info
}

# The files of the run folder, as a JSON array (run.json itself included).
_results_files_json() {
    local files=() f
    for f in "$COLLBENCH_RUN_DIR"/*; do
        [ -f "$f" ] && files+=("${f##*/}")
    done
    results_json_array "${files[@]}"
}

# (Re)writes $COLLBENCH_RUN_DIR/run.json atomically from the COLLBENCH_*
# state: before the launch, after it, and at the script's exit.
results_write_run_json() {
    local tmp=$COLLBENCH_RUN_DIR/.run.json.tmp modules=() a first=1 quoted
    IFS=: read -r -a modules <<<"${LOADEDMODULES:-}"
    printf -v quoted '%q ' "${COLLBENCH_CMD[@]}"
    {
        printf '{\n  "run_json_version": 1,'
        printf '\n  "experiment": %s,' "$(results_json_str "$COLLBENCH_EXPERIMENT")"
        printf '\n  "launcher": %s,' "$(results_json_str "$COLLBENCH_LAUNCHER")"
        printf '\n  "folder": %s,' "$(results_json_str "${COLLBENCH_RUN_DIR##*/}")"
        printf '\n  "host": %s,' "$(results_json_str "$(hostname)")"
        printf '\n  "started_at": %s,' "$(results_json_str "$COLLBENCH_STARTED_AT")"
        printf '\n  "finished_at": %s,' "$(results_json_str_or_null "${COLLBENCH_FINISHED_AT:-}")"
        printf '\n  "exit_code": %s,' "${COLLBENCH_RC:-null}"
        printf '\n  "script_exit_code": %s,' "${COLLBENCH_SCRIPT_RC:-null}"
        printf '\n  "command": %s,' "$(results_json_array "${COLLBENCH_CMD[@]}")"
        printf '\n  "command_line": %s,' "$(results_json_str "${quoted% }")"
        printf '\n  "analysis_commands": ['
        for a in "${COLLBENCH_ANALYSIS_CMDS[@]}"; do
            [ $first = 1 ] || printf ','
            first=0
            printf '\n    %s' "$a"
        done
        [ $first = 1 ] || printf '\n  '
        printf '],'
        printf '\n  "knobs": %s,' "$(results_json_vars "${COLLBENCH_KNOBS[@]}")"
        printf '\n  "slurm": %s,' "$(results_json_env '^SLURM')"
        printf '\n  "env": %s,' "$(results_json_env '^(NCCL_|OMPI_|PMIX_|PMI_|UCX_|CUDA_|I_MPI_|FI_|LD_LIBRARY_PATH$)')"
        printf '\n  "modules": %s,' "$(results_json_array "${modules[@]}")"
        printf '\n  "versions": %s,' "$COLLBENCH_VERSIONS_JSON"
        printf '\n  "gpus": %s,' "$COLLBENCH_GPUS_JSON"
        printf '\n  "collbench_info": %s,' "$COLLBENCH_INFO_JSON"
        printf '\n  "collbench_info_error": %s,' "$(results_json_str_or_null "$COLLBENCH_INFO_ERROR")"
        printf '\n  "files": %s,' "$(_results_files_json)"
        printf '\n  "collbench_info_command": %s\n}\n' "$(results_json_array "${COLLBENCH_INFO_CMD[@]}")"
    } >"$tmp"
    mv -f "$tmp" "$COLLBENCH_RUN_DIR/run.json"
}
