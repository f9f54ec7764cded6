#!/usr/bin/env bash
# A single-node Ceph cluster with an S3 gateway, for kgfuse's object-storage
# tests: one monitor, one OSD on memstore (RAM, 1 GiB), RadosGW on loopback.
# Cluster auth is off (none of it leaves 127.0.0.1); S3 requests are signed
# with the user this script creates.
#
#   tests/servers/ceph-rgw.sh DIR MON_PORT RGW_PORT ACCESS_KEY SECRET_KEY BUCKET
#
# Starts the daemons (pid files in DIR/run), waits for the gateway, creates the
# user and the bucket, and exits 0; `kill $(cat DIR/run/*.pid)` stops them.
# Needs Debian's ceph-mon, ceph-osd, radosgw (`make test-deps`), curl, openssl.
set -euo pipefail
dir=$1 mon_port=$2 rgw_port=$3 access=$4 secret=$5 bucket=$6
trap 'echo "ceph-rgw.sh: \"$BASH_COMMAND\" failed" >&2; tail -n 15 "$dir"/*.log >&2' ERR
mkdir -p "$dir/mon" "$dir/osd" "$dir/run" "$dir/rgw"
fsid=$(cat /proc/sys/kernel/random/uuid)
conf=$dir/ceph.conf
cat > "$conf" <<CONF
[global]
fsid = $fsid
mon host = v1:127.0.0.1:$mon_port
mon initial members = a
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = true
# RadosGW talks to the monitor in crc mode only when told to.
ms mon client mode = crc
ms bind msgr2 = false
mon allow pool size one = true
# The monitor's store is a few MB: do not refuse to start on a fuller disk.
mon data avail crit = 0
mon data avail warn = 0
mon warn on pool no redundancy = false
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd crush chooseleaf type = 0
run dir = $dir/run
log file = $dir/\$name.log
admin socket = $dir/run/\$name.asok
pid file = $dir/run/\$name.pid
keyring = /dev/null
[mon.a]
mon data = $dir/mon
public addr = 127.0.0.1
[osd.0]
osd data = $dir/osd
osd objectstore = memstore
memstore device bytes = 1073741824
osd max object name len = 256
osd max object namespace len = 64
# At start an OSD asks the monitor to place it in the CRUSH map and to set its
# device class. Those commands can leave before the OSD has the monitor's map
# and are refused as "wrong fsid", which stops the OSD; the script places it
# itself instead (below), through the ceph CLI.
osd crush update on start = false
osd class update on start = false
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:$rgw_port
rgw data = $dir/rgw
CONF
monmaptool --create --add a "v1:127.0.0.1:$mon_port" --fsid "$fsid" --clobber "$dir/monmap" >/dev/null
ceph-mon --mkfs -i a --monmap "$dir/monmap" -c "$conf"
ceph-mon -i a -c "$conf"
# A CLI command can also leave before the client has the monitor's map and be
# refused as "wrong fsid" (seen once in CI on `osd crush add`): try again.
ceph_cli() {
  for attempt in 1 2 3 4 5; do
    if timeout 60 ceph -c "$conf" "$@" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  echo "ceph-rgw.sh: \"ceph $*\" failed 5 times" >&2
  tail -n 15 "$dir"/*.log >&2
  exit 1
}
ceph_cli osd create
ceph_cli osd crush add osd.0 1.0 root=default host=localhost
ceph-osd -i 0 --mkfs -c "$conf"
ceph-osd -i 0 -c "$conf"
radosgw -c "$conf" -n client.rgw.a
for _ in $(seq 1 240); do
  if curl -s -o /dev/null "http://127.0.0.1:$rgw_port/"; then break; fi
  sleep 0.25
done
timeout 60 radosgw-admin -c "$conf" -n client.rgw.a --admin-socket= user create --uid=kgfuse \
  --display-name=kgfuse --access-key="$access" --secret="$secret" >/dev/null
# Create the bucket with an AWS signature v2 request (LanceDB creates none).
date=$(date -u +"%a, %d %b %Y %H:%M:%S GMT")
signature=$(printf 'PUT\n\n\n%s\n/%s' "$date" "$bucket" \
  | openssl dgst -sha1 -hmac "$secret" -binary | base64)
status=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H "Date: $date" \
  -H "Authorization: AWS $access:$signature" "http://127.0.0.1:$rgw_port/$bucket")
[ "$status" = 200 ] || { echo "creating the bucket answered $status" >&2; exit 1; }
