#!/usr/bin/env bash
# ftp.sh — a real FTP server for the file kind's ftp:// tests: Debian's
# vsftpd on loopback, anonymous and read-only, serving .ftp/root at the
# repo root (the tests put their files in fresh folders under it).
#
# Usage: scripts/ftp.sh [start|stop|url|root|status]
#
#   start   (default) install vsftpd when missing (root only), write its
#           config under .ftp/, start it, wait until it greets, and print
#           its URL.
#   stop    stop it.
#   url     print the URL without starting anything.
#   root    print the folder it serves.
#   status  exit 0 when it greets, 3 when it does not.
#
# Only the URL (or the folder) goes to stdout, so callers can write
#   export INGESTD_FTP_URL=$(scripts/ftp.sh)
# Progress goes to stderr.
#
# It answers MDTM and SIZE (what the file kind's change detection asks
# before a RETR), EPSV and PASV on ports PORT+1 … PORT+18, and refuses any
# login but anonymous ("530 This FTP server is anonymous only"), which the
# tests use to check that a URL's credentials are never shown.
#
# Environment: INGESTD_FTP_PORT (default 18121).
set -euo pipefail

PORT=${INGESTD_FTP_PORT:-18121}
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
DIR=$ROOT/.ftp
RUN=$DIR/run
SERVED=$DIR/root
EMPTY=$DIR/empty
CONF=$DIR/vsftpd.conf
PIDFILE=$RUN/vsftpd.pid
VSFTPD=/usr/sbin/vsftpd
URL="ftp://127.0.0.1:${PORT}/"

log() { printf 'ftp.sh: %s\n' "$*" >&2; }

install_packages() {
	if [[ -x $VSFTPD ]]; then
		return
	fi
	if [[ $(id -u) -ne 0 ]]; then
		log "vsftpd is missing and we are not root: apt-get install vsftpd"
		exit 1
	fi
	log "installing vsftpd"
	export DEBIAN_FRONTEND=noninteractive
	# Other scripts may hold dpkg's lock (a parallel install): wait for it.
	apt-get -o DPkg::Lock::Timeout=300 update -qq >&2
	apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends vsftpd >&2
}

write_config() {
	mkdir -p "$RUN" "$SERVED" "$EMPTY"
	# vsftpd refuses an anonymous root its anonymous user could write to,
	# and wants its secure_chroot_dir empty and not writable either.
	chmod 0755 "$DIR" "$SERVED" "$EMPTY"
	local as_user=NO
	if [[ $(id -u) -ne 0 ]]; then
		# No chroot and no switch to user ftp without root; still
		# anonymous and read-only.
		as_user=YES
	fi
	cat >"$CONF" <<EOF
# Written by scripts/ftp.sh; edits are lost at the next start.
listen=YES
listen_ipv6=NO
listen_address=127.0.0.1
listen_port=${PORT}
background=NO
run_as_launching_user=${as_user}
anonymous_enable=YES
no_anon_password=YES
local_enable=NO
write_enable=NO
anon_upload_enable=NO
anon_mkdir_write_enable=NO
anon_other_write_enable=NO
anon_root=${SERVED}
secure_chroot_dir=${EMPTY}
hide_ids=YES
connect_from_port_20=NO
pasv_enable=YES
pasv_address=127.0.0.1
pasv_min_port=$((PORT + 1))
pasv_max_port=$((PORT + 18))
max_clients=64
max_per_ip=64
# Containers refuse the namespaces and the seccomp filter vsftpd sets up
# by default.
isolate=NO
isolate_network=NO
seccomp_sandbox=NO
xferlog_enable=YES
vsftpd_log_file=${RUN}/vsftpd.log
use_localtime=NO
EOF
}

# greets: the server sends its 220 greeting.
greets() {
	local line
	{ exec 3<>"/dev/tcp/127.0.0.1/${PORT}"; } 2>/dev/null || return 1
	IFS= read -r -t 5 line <&3 || line=""
	printf 'QUIT\r\n' >&3 || true
	exec 3<&- 3>&-
	[[ $line == 220* ]]
}

is_running() {
	[[ -f $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

start_server() {
	if is_running; then
		return
	fi
	if greets; then
		# Another checkout's server would serve another folder.
		log "something else answers on 127.0.0.1:${PORT}: stop it, or set INGESTD_FTP_PORT"
		exit 1
	fi
	log "starting vsftpd on 127.0.0.1:${PORT}, serving ${SERVED} (log: $RUN)"
	setsid "$VSFTPD" "$CONF" </dev/null >>"$RUN/stderr.log" 2>&1 &
	echo $! >"$PIDFILE"
}

cmd=${1:-start}
case $cmd in
start)
	install_packages
	write_config
	start_server
	for _ in $(seq 1 50); do
		if greets; then
			echo "$URL"
			exit 0
		fi
		sleep 0.1
	done
	log "no greeting from $URL; last lines of the logs:"
	tail -n 20 "$RUN/stderr.log" "$RUN/vsftpd.log" >&2 2>/dev/null || true
	exit 1
	;;
stop)
	if is_running; then
		log "stopping"
		pid=$(cat "$PIDFILE")
		kill "$pid"
		# Until it has let go of the port, a start would find it there.
		for _ in $(seq 1 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		rm -f "$PIDFILE"
	else
		log "not running"
	fi
	;;
url)
	echo "$URL"
	;;
root)
	echo "$SERVED"
	;;
status)
	if greets; then
		log "running: $URL"
	else
		log "not running"
		exit 3
	fi
	;;
*)
	log "unknown command: $cmd (want start, stop, url, root or status)"
	exit 2
	;;
esac
