"""Python limits (Debian's python3-limits) and redis-py's Lock, unchanged,
against sluice ($SLUICE_ADDR) and a redis-server ($REDIS_ADDR) side by side:
each step runs on both, and the outcomes, the keys' values, types and TTLs
must be the same (TTLs and window times within a second: each side reads its
own clock, a moment apart). It prints one line per part and exits non-zero
on the first difference."""
import os
import sys
import time

import redis
from limits import RateLimitItemPerSecond
from limits.storage import RedisStorage
from limits.strategies import (
    FixedWindowElasticExpiryRateLimiter,
    FixedWindowRateLimiter,
    MovingWindowRateLimiter,
)

sides = [("sluice", os.environ["SLUICE_ADDR"]), ("redis", os.environ["REDIS_ADDR"])]
storages = [RedisStorage("redis://" + addr) for _, addr in sides]
clients = [redis.Redis.from_url("redis://" + addr) for _, addr in sides]


def fail(msg):
    sys.exit(msg)


def same(what, a, b):
    if a != b:
        fail("%s: sluice %r; redis %r" % (what, a, b))


def close(what, a, b, within=1):
    if abs(a - b) > within:
        fail("%s: sluice %r; redis %r (more than %r apart)" % (what, a, b, within))


def both(what, f):
    """Runs f(i) for each side; errors are outcomes too."""
    out = []
    for i in range(2):
        try:
            out.append(("ok", f(i)))
        except redis.exceptions.ResponseError as e:
            out.append(("error", str(e)))
    return out


def keys_state(what, pattern, locks=None):
    """The keys matching pattern on each side: name, TYPE, value, TTL. A
    value that is the token of that side's lock in locks (each side's own
    uuid) reads as "<token>"."""
    states = []
    for i, c in enumerate(clients):
        st = {}
        tokens = [l[i].local.token for l in locks or []]
        for k in sorted(c.scan_iter(match=pattern, count=1000)):
            t = c.type(k).decode()
            v = c.get(k) if t == "string" else None
            if v is not None and v in tokens:
                v = "<token>"
            st[k] = (t, v, c.pttl(k))
        states.append(st)
    a, b = states
    same(what + ": keys", sorted(a), sorted(b))
    for k in a:
        same("%s: %s TYPE and value" % (what, k), a[k][:2], b[k][:2])
        close("%s: %s PTTL" % (what, k), a[k][2], b[k][2], within=500)


def strategies():
    for name, cls in [
        ("fixed", FixedWindowRateLimiter),
        ("elastic", FixedWindowElasticExpiryRateLimiter),
        ("moving", MovingWindowRateLimiter),
    ]:
        limiters = [cls(s) for s in storages]
        item = RateLimitItemPerSecond(3, 2)  # 3 per 2 seconds
        ns = "%s-%d" % (name, time.time_ns())
        steps = [
            ("hit", lambda l: l.hit(item, ns, "u1")),
            ("hit cost 2", lambda l: l.hit(item, ns, "u1", cost=2)),
            ("hit over", lambda l: l.hit(item, ns, "u1")),
            ("test", lambda l: l.test(item, ns, "u1")),
            ("hit another", lambda l: l.hit(item, ns, "u2")),
            ("hit cost 4 (more than the limit)", lambda l: l.hit(item, ns, "u3", cost=4)),
        ]
        for what, f in steps:
            a, b = both(what, lambda i: f(limiters[i]))
            same("%s %s" % (name, what), a, b)
        for who in ["u1", "u2", "u3"]:
            (ka, (ra, rema)), (kb, (rb, remb)) = both("stats", lambda i: limiters[i].get_window_stats(item, ns, who))
            same("%s get_window_stats %s: remaining" % (name, who), rema, remb)
            close("%s get_window_stats %s: reset" % (name, who), ra, rb)
        keys_state(name, "LIMITER/%s/*" % ns)
        time.sleep(1.1)
        # Half a window later: the moving window still holds every hit; the
        # elastic window was lengthened by the hit over the limit.
        for what, f in [("hit after 1.1 s", lambda l: l.hit(item, ns, "u1")), ("test u2", lambda l: l.test(item, ns, "u2"))]:
            a, b = both(what, lambda i: f(limiters[i]))
            same("%s %s" % (name, what), a, b)
        keys_state(name + " after 1.1 s", "LIMITER/%s/*" % ns)
        time.sleep(1.1)
        for what, f in [("hit after 2.2 s", lambda l: l.hit(item, ns, "u1")), ("hit u2 after 2.2 s", lambda l: l.hit(item, ns, "u2"))]:
            a, b = both(what, lambda i: f(limiters[i]))
            same("%s %s" % (name, what), a, b)
        keys_state(name + " after 2.2 s", "LIMITER/%s/*" % ns)
        a, b = both("clear", lambda i: limiters[i].clear(item, ns, "u1"))
        same(name + " clear", a, b)
        keys_state(name + " after clear", "LIMITER/%s/*" % ns)
        a, b = both("get_expiry", lambda i: storages[i].get_expiry(item.key_for(ns, "u2")))
        close(name + " get_expiry", a[1], b[1])
        print("%s: the same outcomes, keys, values and TTLs" % name)
    # Keys of every kind for reset() to delete.
    for cls in [FixedWindowRateLimiter, MovingWindowRateLimiter]:
        for who in ["r1", "r2", "r3"]:
            a, b = both("hit", lambda i: cls(storages[i]).hit(RateLimitItemPerSecond(5, 60), "reset-" + cls.__name__, who))
            same("hit before reset", a, b)
    a, b = both("check", lambda i: storages[i].check())
    same("check", a, b)
    a, b = both("reset", lambda i: storages[i].reset())
    same("reset (keys deleted)", a, b)
    if a[1] < 6:
        fail("reset deleted %d keys; want at least the 6 just written" % a[1])
    keys_state("after reset", "LIMITER*")
    print("reset: deleted %d keys on each" % a[1])


def locks():
    tag = "lock-%d" % time.time_ns()
    held = [c.lock(tag + ":a", timeout=5) for c in clients]
    a, b = both("acquire", lambda i: held[i].acquire(blocking=False))
    same("lock acquire", a, b)
    others = [c.lock(tag + ":a", timeout=5) for c in clients]
    a, b = both("acquire held", lambda i: others[i].acquire(blocking=False))
    same("lock acquire of a held lock", a, b)
    a, b = both("locked", lambda i: held[i].locked())
    same("lock locked", a, b)
    a, b = both("owned", lambda i: held[i].owned())
    same("lock owned", a, b)
    keys_state("lock held", tag + ":*", [held])
    a, b = both("extend", lambda i: held[i].extend(10))
    same("lock extend by 10 s", a, b)
    keys_state("lock extended", tag + ":*", [held])
    a, b = both("extend replace", lambda i: held[i].extend(3, replace_ttl=True))
    same("lock extend replace_ttl", a, b)
    keys_state("lock extend replace_ttl", tag + ":*", [held])
    a, b = both("reacquire", lambda i: held[i].reacquire())
    same("lock reacquire", a, b)
    keys_state("lock reacquired", tag + ":*", [held])
    a, b = both("release", lambda i: held[i].release())
    same("lock release", a, b)
    keys_state("lock released", tag + ":*")
    for what, f in [("release again", lambda l: l.release()), ("extend released", lambda l: l.extend(1)),
                    ("reacquire released", lambda l: l.reacquire())]:
        outs = []
        for i in range(2):
            try:
                f(held[i])
                outs.append("ok")
            except redis.exceptions.LockError as e:
                outs.append(type(e).__name__ + ": " + str(e))
        same("lock " + what, outs[0], outs[1])
    # A context manager, and a lock that expires on its own.
    cms = [c.lock(tag + ":b", timeout=1) for c in clients]
    with cms[0], cms[1]:
        keys_state("lock as a context manager", tag + ":*", [cms])
    short = [c.lock(tag + ":c", timeout=0.2) for c in clients]
    a, b = both("acquire short", lambda i: short[i].acquire(blocking=False))
    same("lock acquire with a 200 ms timeout", a, b)
    time.sleep(0.35)
    a, b = both("locked after expiry", lambda i: short[i].locked())
    same("lock locked after its timeout", a, b)
    print("lock: the same outcomes, keys, values and TTLs")


parts = sys.argv[1:] or ["limits", "lock"]
if "limits" in parts:
    strategies()
if "lock" in parts:
    locks()
print("RESULT ok")
