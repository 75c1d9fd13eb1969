"""The Lua scripts of ``RedisHeld`` (key layout in ``_redis``); each runs atomically."""

# Shared by the scripts that hand lists to this owner (prefix, me): move the list ``src`` to
# this owner's list of ``origin``, note the origin in ``moved`` (origin, count, …).
_MOVE = """
local prefix, me = ARGV[1], ARGV[2]
local function move(src, origin, moved)
  local dst = prefix .. 'held:list:' .. me .. ':' .. origin
  local n = redis.call('LLEN', src)
  -- unpack() has a stack limit: move in chunks
  for start = 0, n - 1, 1000 do
    redis.call('RPUSH', dst, unpack(redis.call('LRANGE', src, start, start + 999)))
  end
  redis.call('DEL', src)
  if n > 0 then
    redis.call('SADD', prefix .. 'held:origins:' .. me, origin)
    table.insert(moved, origin)
    table.insert(moved, n)
  end
end
"""

# Move every dead owner's held requests to ARGV[2]; returns origin, count, origin, count…
ADOPT = (
    _MOVE
    + """
local owners_key = prefix .. 'held:owners'
local adopted = {}
for _, owner in ipairs(redis.call('SMEMBERS', owners_key)) do
  if owner ~= me and redis.call('EXISTS', prefix .. 'held:alive:' .. owner) == 0 then
    local origins_key = prefix .. 'held:origins:' .. owner
    for _, origin in ipairs(redis.call('SMEMBERS', origins_key)) do
      move(prefix .. 'held:list:' .. owner .. ':' .. origin, origin, adopted)
    end
    redis.call('DEL', origins_key)
    redis.call('SREM', owners_key, owner)
  end
end
return adopted
"""
)

# Take one origin's list atomically: nothing added in between is lost.
TAKE = """
local items = redis.call('LRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return items
"""

# Requests held by owners other than ARGV[2] (alive or not yet adopted).
ELSEWHERE = """
local prefix, me = ARGV[1], ARGV[2]
for _, owner in ipairs(redis.call('SMEMBERS', prefix .. 'held:owners')) do
  if owner ~= me and redis.call('SCARD', prefix .. 'held:origins:' .. owner) > 0 then
    return 1
  end
end
return 0
"""

# Move every origin's kept list (requests an earlier run stopped waiting for) to owner ARGV[2];
# returns origin, count, origin, count… (run once, when a process starts).
RESUME = (
    _MOVE
    + """
local kept_key = prefix .. 'held:kept:origins'
local resumed = {}
for _, origin in ipairs(redis.call('SMEMBERS', kept_key)) do
  move(prefix .. 'held:kept:list:' .. origin, origin, resumed)
end
redis.call('DEL', kept_key)
if #resumed > 0 then
  redis.call('SADD', prefix .. 'held:owners', me)
end
return resumed
"""
)
