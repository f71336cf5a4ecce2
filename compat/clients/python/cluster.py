"""The cluster client matrix for redis-py (Debian's python3-redis):
RedisCluster seeded with 127.0.0.1:$SLUICE_PORT, a sluice single node or a
member of a replicated group or of a sharded cluster. It connects, takes
each key of $SLUICE_KEYS (comma-separated; default one fresh key) of
capacity 5 seven times and a {tag}ged pair, and prints "RESULT admitted=<n>
slots=<ranges>"; it exits non-zero with a message on the first wrong
result."""
import os
import sys
import time

from redis.cluster import RedisCluster

port = int(os.environ["SLUICE_PORT"])
tag = "redis-py:%d" % time.time_ns()
r = RedisCluster(host="127.0.0.1", port=port)


def check(what, got, want):
    if got != want:
        sys.exit("%s = %r; want %r" % (what, got, want))


keys = os.environ["SLUICE_KEYS"].split(",") if os.environ.get("SLUICE_KEYS") else [tag + ":cap5"]
admitted = 0
for key in keys:
    mine = 0
    for i in range(7):
        reply = r.execute_command("RL.TOKEN", key, "1/h", 5)
        check("RL.TOKEN %s take %d" % (key, i + 1), reply[2], max(0, 4 - i))
        mine += reply[0]
    check("%s: admitted of 7 takes at capacity 5" % key, mine, 5)
    admitted += mine
pair = [r.execute_command("RL.TOKEN", "{%s}.%s" % (tag, k), "10/s", 20) for k in "ab"]
check("two keys with one tag", pair, [[1, 20, 19, 0, 100], [1, 20, 19, 0, 100]])
check("keyslot", r.keyslot("123456789"), 12739)
slots = r.cluster_slots()
ranges = ",".join("%d-%d:%d" % (k[0], k[1], 1 + len(v["replicas"])) for k, v in sorted(slots.items()))
r.close()
print("RESULT admitted=%d slots=%s" % (admitted, ranges))
