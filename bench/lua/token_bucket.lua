-- Token bucket, the way Spring Cloud Gateway's request_rate_limiter script
-- keeps it in Redis: two string keys per client, read and rewritten by one
-- script call.
--
--   KEYS[1]  tokens left in the bucket
--   KEYS[2]  the time (unix seconds) those tokens were counted at
--   ARGV[1]  rate: tokens added per second
--   ARGV[2]  capacity: tokens in a full bucket
--   ARGV[3]  now, unix seconds, as the caller sees it
--   ARGV[4]  tokens this request asks for
--
-- Returns {1 if admitted else 0, tokens left (truncated to an integer)}.
-- Both keys expire after twice the time an empty bucket takes to fill, by
-- which point the bucket is certainly full and forgetting it changes nothing.

local rate = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local asked = tonumber(ARGV[4])

local lifetime = math.floor(capacity / rate * 2)

local left = tonumber(redis.call('GET', KEYS[1]))
if left == nil then
  left = capacity
end
local counted_at = tonumber(redis.call('GET', KEYS[2]))
if counted_at == nil then
  counted_at = 0
end

local elapsed = now - counted_at
if elapsed < 0 then
  elapsed = 0
end
local available = math.min(capacity, left + elapsed * rate)

local admitted = 0
if available >= asked then
  available = available - asked
  admitted = 1
end

if lifetime > 0 then
  redis.call('SETEX', KEYS[1], lifetime, available)
  redis.call('SETEX', KEYS[2], lifetime, now)
end

return {admitted, available}
