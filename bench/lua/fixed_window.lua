-- Fixed window counter, the usual consumer-side limiter: count with INCRBY
-- and start the window's expiry when the count is created.
--
--   KEYS[1]  the counter of the current window
--   ARGV[1]  limit: units admitted per window
--   ARGV[2]  window length in seconds
--   ARGV[3]  units this request asks for
--
-- Returns {1 if admitted else 0, count in this window so far}. As in the
-- usual pattern, a denied request is counted too.

local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local asked = tonumber(ARGV[3])

local count = redis.call('INCRBY', KEYS[1], asked)
if count == asked then
  redis.call('EXPIRE', KEYS[1], window)
end

if count > limit then
  return {0, count}
end
return {1, count}
