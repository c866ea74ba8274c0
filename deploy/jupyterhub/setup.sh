#!/usr/bin/env bash
# A class server on one Debian/Ubuntu machine: run as root from a clone of the course.
#   sudo deploy/jupyterhub/setup.sh --instructor kim --students students.txt [--course-id ai-hardware]
# students.txt: one account name per line (the course's student id rule: letters, digits, . _ -).
# It installs Node's configurable-http-proxy, bubblewrap, one course environment in /opt for everybody,
# the nbgrader exchange, local accounts (a password each, printed once), and a systemd unit. Re-running it
# is safe: existing accounts, environment and exchange are kept.
set -euo pipefail
INSTRUCTOR="" STUDENTS="" COURSE_ID="ai-hardware"
PREFIX=/opt/ai-hardware-course EXCHANGE=/srv/nbgrader/exchange STATE=/srv/jupyterhub
while [ $# -gt 0 ]; do
  case "$1" in
    --instructor) INSTRUCTOR="$2"; shift 2 ;;
    --students) STUDENTS="$2"; shift 2 ;;
    --course-id) COURSE_ID="$2"; shift 2 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "run as root (sudo)" >&2; exit 2; }
[ -n "$INSTRUCTOR" ] || { echo "--instructor NAME is required" >&2; exit 2; }
SRC="$(cd "$(dirname "$0")/../.." && pwd)"

apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv python3-dev git bubblewrap
# Node from Debian only where there is none (NodeSource's nodejs carries npm and conflicts with Debian's npm).
command -v npm >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
command -v configurable-http-proxy >/dev/null || npm install -g configurable-http-proxy

# One course environment for all users, readable by everyone.
if [ ! -d "$PREFIX" ]; then git clone -q "$SRC" "$PREFIX"; fi
# The course's own setup picks the right PyTorch build (CPU-only where there is no NVIDIA GPU: never the
# multi-GB CUDA build), then the class-server extras and module 07's Numba and Triton (`kernels`: a learner installs
# them on first use, but nobody can write to this shared environment, and the grader installs nothing), keeping that build.
# Debian's /usr/bin/python3: a Python every account can run (not one under /root, such as pyenv's).
(cd "$PREFIX" && /usr/bin/python3 -m autograder setup)
"$PREFIX/.venv/bin/python" -m pip install -q -e "$PREFIX[lab,hub,kernels]" -c "$PREFIX/.venv/course-constraints.txt"
chmod -R a+rX "$PREFIX"
# Accounts clone the course from $PREFIX (root's): git must trust it.
for dir in "$PREFIX" "$PREFIX/.git"; do
  git config --system --get-all safe.directory | grep -qx "$dir" || git config --system --add safe.directory "$dir"
done

# nbgrader's exchange: everyone writes, the sticky bit keeps each one's entries their own.
mkdir -p "$EXCHANGE" "$STATE"
chmod 1777 "$EXCHANGE"
chmod 700 "$STATE"

# Accounts: a group each for instructors and students; homes nobody else reads.
groupadd -f course-instructors
groupadd -f course-students
new_user() {  # name group
  if ! id "$1" >/dev/null 2>&1; then
    useradd -m -s /bin/bash -G "$2" "$1"
    pw="$(python3 -c 'import secrets; print(secrets.token_urlsafe(9))')"
    echo "$1:$pw" | chpasswd
    echo "account $1  password $pw"
  else
    usermod -aG "$2" "$1"
  fi
  chmod 700 "$(getent passwd "$1" | cut -d: -f6)"
}
new_user "$INSTRUCTOR" course-instructors
home="$(getent passwd "$INSTRUCTOR" | cut -d: -f6)"
[ -d "$home/course" ] || runuser -u "$INSTRUCTOR" -- git clone -q "$PREFIX" "$home/course"
if [ -n "$STUDENTS" ]; then
  grep -v '^\s*$' "$STUDENTS" | while read -r name; do new_user "$name" course-students; done
fi

cat > /etc/default/course-hub <<CONF
COURSE_ENV=$PREFIX/.venv
COURSE_ID=$COURSE_ID
COURSE_EXCHANGE=$EXCHANGE
COURSE_HUB_DIR=$STATE
COURSE_HUB_URL=http://:8000
CONF
cat > /etc/systemd/system/course-hub.service <<UNIT
[Unit]
Description=JupyterHub for the course
After=network.target

[Service]
EnvironmentFile=/etc/default/course-hub
Environment=PATH=$PREFIX/.venv/bin:/usr/local/bin:/usr/bin:/bin
WorkingDirectory=$STATE
ExecStart=$PREFIX/.venv/bin/jupyterhub -f $PREFIX/deploy/jupyterhub/jupyterhub_config.py
Restart=on-failure

[Install]
WantedBy=multi-user.target
UNIT
if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
  systemctl daemon-reload && systemctl enable --now course-hub
  echo "JupyterHub: http://$(hostname -f):8000 (put HTTPS in front of it before students log in)"
else
  echo "no systemd: start it with"
  echo "  set -a; . /etc/default/course-hub; cd $STATE; $PREFIX/.venv/bin/jupyterhub -f $PREFIX/deploy/jupyterhub/jupyterhub_config.py"
fi
