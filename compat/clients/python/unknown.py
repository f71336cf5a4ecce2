"""One decision (RL.TOKEN <key> 1/h 5) through redis-py (Debian's
python3-redis) with its default options, against the sluice on
127.0.0.1:$SLUICE_PORT. It prints "RESULT error=<the error the call
surfaced>" or "RESULT reply=<the reply>": the Go test arranges an unknown
outcome and counts the attempts the server saw."""
import os
import sys

import redis

r = redis.Redis(host="127.0.0.1", port=int(os.environ["SLUICE_PORT"]))
try:
    print("RESULT reply=%r" % (r.execute_command("RL.TOKEN", sys.argv[1], "1/h", 5),))
except redis.exceptions.ResponseError as e:
    # A plain ResponseError: redis-py maps no class (and RedisCluster no
    # retry) to the code.
    print("RESULT error=%s%s" % ("" if type(e) is redis.exceptions.ResponseError else type(e).__name__ + ": ", e))
