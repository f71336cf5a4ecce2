"""The client matrix for redis-py (Debian's python3-redis) against the sluice
on 127.0.0.1:$SLUICE_PORT: decisions, pipelines, transactions, errors and a
reconnect after the server restarts (it prints RESTART and waits for a line on
stdin). It prints the raw decision reply and exits non-zero on the first wrong
result."""
import os
import sys
import time

import redis

port = int(os.environ["SLUICE_PORT"])
tag = "redis-py:%d" % time.time_ns()
r = redis.Redis(host="127.0.0.1", port=port)


def check(what, got, want):
    if got != want:
        sys.exit("%s = %r; want %r" % (what, got, want))


def raises(what, fn, text):
    try:
        fn()
    except redis.exceptions.ResponseError as e:
        if text not in str(e):
            sys.exit("%s raised %r; want %r" % (what, str(e), text))
        return
    sys.exit("%s raised nothing; want %r" % (what, text))


# Decisions: five integers.
first = r.execute_command("RL.TOKEN", tag + ":dec", "10/s", 20)
check("RL.TOKEN", first, [1, 20, 19, 0, 100])
r.execute_command("RL.TOKEN", tag + ":deny", "1/h", 1)
denied = r.execute_command("RL.TOKEN", tag + ":deny", "1/h", 1)
allowed = denied[0]
check("allowed on a denial", allowed, 0)
check("a denial", denied[:3], [0, 1, 0])
if not 3590000 < denied[3] <= 3600000:
    sys.exit("retry_after_ms %r" % denied[3])

# A pipeline (no transaction).
p = r.pipeline(transaction=False)
for _ in range(5):
    p.execute_command("RL.FIXED", tag + ":pipe", 3, "1h")
check("pipeline", [x[:3] for x in p.execute()], [[1, 3, 2], [1, 3, 1], [1, 3, 0], [0, 3, 0], [0, 3, 0]])

# redis-py's default pipeline is a transaction (MULTI/EXEC).
p = r.pipeline()
for _ in range(3):
    p.execute_command("RL.FIXED", tag + ":tx", 2, "1h")
check("MULTI/EXEC", [x[:3] for x in p.execute()], [[1, 2, 1], [1, 2, 0], [0, 2, 0]])
p = r.pipeline()
p.execute_command("RL.FIXED", tag + ":abort", 2, "1h")
p.execute_command("RL.TOKEN", tag + ":abort2", "ten/s", 2)
raises("a transaction with a queueing error", p.execute, "invalid rate 'ten/s'")
check("EXISTS after EXECABORT", r.exists(tag + ":abort", tag + ":abort2"), 0)

# WATCH: a write by another client makes EXEC fail with WatchError.
other = redis.Redis(host="127.0.0.1", port=port)
p = r.pipeline()
p.watch(tag + ":w")
other.execute_command("RL.FIXED", tag + ":w", 5, "1h")
p.multi()
p.execute_command("RL.FIXED", tag + ":w", 5, "1h")
try:
    p.execute()
    sys.exit("EXEC after a write to the watched key succeeded")
except redis.exceptions.WatchError:
    pass

# Errors.
raises("arity", lambda: r.execute_command("RL.TOKEN", tag + ":dec", "10/s"),
       "wrong number of arguments for 'rl.token' command")
raises("WRONGTYPE", lambda: r.execute_command("RL.TOKEN", tag + ":tx", "10/s", 20),
       "Operation against a key holding the wrong kind of value")

# A reconnect after the server restarts.
print("RESTART", flush=True)
sys.stdin.readline()
for i in range(100):
    try:
        after = r.execute_command("RL.TOKEN", tag + ":after", "10/s", 20)
        break
    except redis.exceptions.ConnectionError:
        if i == 99:
            raise
        time.sleep(0.05)
check("RL.TOKEN after the restart", after, [1, 20, 19, 0, 100])
print("RESULT proto=2 decision=%s denial=%s" % (first, denied[:3]), flush=True)
