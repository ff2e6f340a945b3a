#!/usr/bin/env bash
# Proves .ci/run on a clean machine: a debootstrap'd Debian 12 root holding only what this kind of machine's
# image brings beyond Debian's base (node + npm with Node's headers, kubectl, the machine's CA bundle and npm
# config), a fresh clone of REV, and CI=true. Run as root on the development machine:
#
#   bash tools/ci-clean-root/run.sh [REV] [LOG]        (default HEAD, /srv/kemu-ci-root.log)
#
# The root is entered with pivot_root in a private mount namespace, not chroot: tools that setns() into a
# mount namespace (nsenter --mount, ip netns exec) would otherwise leave a chroot for the host's root.
# A green run here means no test passed only because of a package installed by hand.
set -euo pipefail
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
rev=${1:-HEAD}
log=${2:-/srv/kemu-ci-root.log}
base=${KEMU_CI_ROOT_BASE:-/srv/kemu-ci-root.clean}
R=${KEMU_CI_ROOT:-/srv/kemu-ci-root}
[ "$(id -u)" -eq 0 ] || { echo "run as root: debootstrap, mounts and CI itself need it" >&2; exit 1; }

if [ ! -d "$base" ]; then
  command -v debootstrap >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
  debootstrap --variant=minbase bookworm "$base" "$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || echo http://deb.debian.org/debian)" >/dev/null
fi
for m in $(grep " $R[/ ]" /proc/mounts | awk '{print $2}' | sort -r); do umount -l "$m" 2>/dev/null || true; done
rm -rf "$R" && cp -a "$base" "$R"

# what the machine image brings
cp /usr/bin/node "$R/usr/bin/node"
mkdir -p "$R/usr/lib/node_modules" "$R/usr/include" && cp -a /usr/lib/node_modules/npm "$R/usr/lib/node_modules/"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$R/usr/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$R/usr/bin/npx"
[ -d /usr/include/node ] && cp -a /usr/include/node "$R/usr/include/"
command -v kubectl >/dev/null && cp "$(command -v kubectl)" "$R/usr/bin/kubectl"
cp /etc/resolv.conf "$R/etc/resolv.conf"
mkdir -p "$R/usr/local/share/ca-certificates" "$R/etc/ssl/certs" "$R/usr/etc" "$R/root"
cp -a /usr/local/share/ca-certificates/. "$R/usr/local/share/ca-certificates/" 2>/dev/null || true
cp /etc/ssl/certs/ca-certificates.crt "$R/etc/ssl/certs/ca-certificates.crt"
for f in /etc/npmrc /usr/etc/npmrc /root/.npmrc; do [ -f "$f" ] && cp "$f" "$R$f"; done

mkdir -p "$R/ci" && git clone -q "$repo" "$R/ci/kemu" && git -C "$R/ci/kemu" checkout -q "$rev"
[ -d "$repo/../shared" ] && cp -a "$repo/../shared" "$R/ci/shared" && chmod -R a-w "$R/ci/shared"
echo "rev $(git -C "$R/ci/kemu" rev-parse --short HEAD) start $(date)" > "$log"
envs=$(env | grep -E '^(NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|CURL_CA_BUNDLE|REQUESTS_CA_BUNDLE|PIP_CERT|GIT_SSL_CAINFO|GRPC_DEFAULT_SSL_ROOTS_FILE_PATH)=' | tr '\n' ' ' || true)
set +e
unshare -m --propagation private /bin/bash -c "
  set -e
  mount --bind $R $R
  mount -t proc proc $R/proc
  mount --rbind /sys $R/sys
  mount --rbind /dev $R/dev
  mount -t tmpfs tmpfs $R/run
  mount -t tmpfs tmpfs $R/tmp
  mkdir -p $R/.oldroot
  cd $R && pivot_root . .oldroot
  umount -l /.oldroot
  cd /ci/kemu
  exec /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root CI=true LANG=C.UTF-8 $envs bash .ci/run
" >> "$log" 2>&1 </dev/null
code=$?
echo "EXIT $code end $(date)" >> "$log"
tail -n 5 "$log"
exit $code
