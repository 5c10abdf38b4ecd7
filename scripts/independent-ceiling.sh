#!/usr/bin/env bash
# independent-ceiling.sh: sql-atomic's fraction of the database ceiling,
# measured by two clients the bench does not share: wrk (50 connections)
# through nginx against the stack's instances, then mariadb-slap (50
# clients) sending the same one-round-trip purchase batch straight to
# MariaDB, before and after wrk (their mean is the ceiling). Each side
# sells a goods of its own with stock to spare.
#
# usage: scripts/independent-ceiling.sh [DIR] [SECONDS] [CLIENTS]
#   DIR: a running stack (seckill up --dir DIR), default .seckill
# Needs wrk and mariadb-slap (Debian: wrk, mariadb-client).
set -euo pipefail
dir=${1:-.seckill}
secs=${2:-5}
clients=${3:-50}
seckill=${SECKILL:-bin/seckill}
for t in wrk mariadb-slap; do
	command -v "$t" >/dev/null || { echo "independent-ceiling: $t not found (apt install wrk mariadb-client)" >&2; exit 2; }
done
# shellcheck disable=SC1091
source "$dir/env.sh"
hostport=${SECKILL_MYSQL_DSN#*tcp(}
hostport=${hostport%%)*}
http_goods=999999004
db_goods=999999005
stock=1000000

"$seckill" strategy --dir "$dir" sql-atomic >/dev/null
"$seckill" reset --dir "$dir" --goods "$http_goods" --stock "$stock" >/dev/null

lua=$(mktemp --suffix .lua)
trap 'rm -f "$lua"' EXIT
cat >"$lua" <<LUA
local threads = 0
function setup(thread) threads = threads + 1; thread:set("tid", threads) end
local n = 0
local run = tostring(os.time())
function request()
  n = n + 1
  local id = "wrk-" .. run .. "-" .. tid .. "-" .. n
  return wrk.format("POST", "/api/v1/purchase",
    {["Content-Type"] = "application/json", ["Idempotency-Key"] = id},
    '{"goods_id":$http_goods,"qty":1,"user_id":"u-' .. id .. '"}')
end
LUA
# slap_rate: mariadb-slap's purchase transactions per second straight at
# MariaDB (n transactions by $clients clients on a goods of its own).
n=$((2000 * secs))
slap_rate() {
	mariadb -h"${hostport%:*}" -P"${hostport#*:}" -uroot seckill -e \
		"INSERT INTO goods (id, name, stock, initial_stock, version, fence) VALUES ($db_goods, 'independent-ceiling', $stock, $stock, 0, 0)
		 ON DUPLICATE KEY UPDATE stock = $stock, initial_stock = $stock; DELETE FROM orders WHERE goods_id = $db_goods"
	local slap secs_db sold
	slap=$(mariadb-slap -h"${hostport%:*}" -P"${hostport#*:}" -uroot --create-schema=seckill --concurrency="$clients" \
		--number-of-queries="$n" --iterations=1 --query="BEGIN; UPDATE goods SET stock = LAST_INSERT_ID(stock - 1) WHERE id = $db_goods AND stock >= 1; INSERT INTO orders (goods_id, qty, user_id, request_id, instance, strategy, fence_token, created_at) SELECT $db_goods, 1, 'slap', UUID(), 'slap', 'slap', 0, NOW() FROM DUAL WHERE ROW_COUNT() > 0; COMMIT")
	secs_db=$(awk '/Average number of seconds/ {print $(NF-1)}' <<<"$slap")
	sold=$(mariadb -N -h"${hostport%:*}" -P"${hostport#*:}" -uroot seckill -e "SELECT COUNT(*) FROM orders WHERE goods_id = $db_goods")
	mariadb -h"${hostport%:*}" -P"${hostport#*:}" -uroot seckill -e "DELETE FROM orders WHERE goods_id = $db_goods; DELETE FROM goods WHERE id = $db_goods"
	awk -v n="$sold" -v s="$secs_db" 'BEGIN {printf "%.0f", n / s}'
}

# The ceiling before and after the chain's window: the machine drifts (the
# disk's fsync, the host), and the mean of the two meets the window.
before=$(slap_rate)
out=$(wrk -t2 -c"$clients" -d"${secs}s" -s "$lua" "$SECKILL_NGINX_URL")
[ -z "${VERBOSE:-}" ] || echo "$out"
bad=$(sed -n 's/.*Non-2xx or 3xx responses: *\([0-9]*\).*/\1/p' <<<"$out")
http=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
[ -z "$bad" ] || { echo "$out"; echo "independent-ceiling: $bad purchases failed through nginx" >&2; exit 1; }

after=$(slap_rate)
"$seckill" reset --dir "$dir" --goods "$http_goods" --stock 0 >/dev/null
awk -v h="$http" -v a="$before" -v b="$after" -v n="$n" -v c="$clients" 'BEGIN {
	db = (a + b) / 2
	printf "wrk through nginx (sql-atomic, %d connections): %.0f purchases/s\n", c, h
	printf "mariadb-slap straight at the database (%d clients, %d transactions each, before and after): %.0f and %.0f transactions/s, mean %.0f\n", c, n, a, b, db
	printf "fraction of the ceiling: %.2f\n", h / db
}'
