"""The Lua scripts of ``RedisPlaces`` (key layout in ``_redis``); each runs atomically, so a
place is taken, given back or counted in one Redis round trip.

Every script gets the key prefix (``P fleet:``), the slot and this member first. A member is
live while its heartbeat key exists; what a member that is not live holds, declares or waits
for is removed by the first script that reads it (a dead member's places come back then).
"""

# Shared: which members are live (this one always is, to itself), memoised per run.
_LIVE = """
local base, slot, me = ARGV[1], ARGV[2], ARGV[3]
local decl, places = base .. 'decl:' .. slot, base .. 'places:' .. slot
local queue, gate = base .. 'queue:' .. slot, base .. 'next:' .. slot
local known = {}
local function live(member)
  if member == me then return true end
  if known[member] == nil then
    known[member] = redis.call('EXISTS', base .. 'alive:' .. member) == 1
  end
  return known[member]
end
-- Slot keys live a day after their last use: a slot nobody crawls any more leaves nothing.
local function keep(key)
  redis.call('PEXPIRE', key, 86400000)
end
-- Wake the members waiting in the slot, if any but this one (it asks again by itself).
local function wake()
  for _, member in ipairs(redis.call('LRANGE', queue, 0, -1)) do
    if member ~= me then
      redis.call('PUBLISH', base .. 'wake', slot)
      return
    end
  end
end
"""

# ARGV: base, slot, me, lease, concurrency, delay ms, jitter, draw in [0, 1), more (1: this
# member still has requests waiting after this one), and optionally a lease of this member's
# to give back first (a request left and the next of its requests waits: one round trip).
# Returns {taken (1/0), ms until the next start may be (0: wait to be woken), live members}.
TAKE = (
    _LIVE
    + """
local released = false
if ARGV[10] and redis.call('HGET', places, ARGV[10]) == me then
  redis.call('HDEL', places, ARGV[10])
  released = true
end
redis.call('HSET', decl, me, ARGV[5] .. ' ' .. ARGV[6] .. ' ' .. ARGV[7])
keep(decl)
-- The slot's limit is the lowest concurrency a live member declares; its spacing the longest
-- delay, with that member's jitter (each member declares what its own settings say).
local limit, delay, jitter, members = nil, 0, 0, 0
local declared = redis.call('HGETALL', decl)
for i = 1, #declared, 2 do
  if live(declared[i]) then
    members = members + 1
    local c, d, j = string.match(declared[i + 1], '^(%S+) (%S+) (%S+)$')
    c, d, j = tonumber(c), tonumber(d), tonumber(j)
    if limit == nil or c < limit then limit = c end
    if d > delay then delay, jitter = d, j end
  else
    redis.call('HDEL', decl, declared[i])
  end
end
local count = 0
local held = redis.call('HGETALL', places)
for i = 1, #held, 2 do
  if live(held[i + 1]) then count = count + 1 else redis.call('HDEL', places, held[i]) end
end
local head, queued = nil, false
for _, member in ipairs(redis.call('LRANGE', queue, 0, -1)) do
  if live(member) then
    head = head or member
    queued = queued or member == me
  else
    redis.call('LREM', queue, 0, member)
  end
end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local wait = 0
local start = tonumber(redis.call('GET', gate) or '0')
if count < limit and start > now then wait = start - now end
-- First come, first served between members: the queue's head goes first.
if count >= limit or wait > 0 or (head ~= nil and head ~= me) then
  if not queued then redis.call('RPUSH', queue, me) end
  keep(queue)
  -- The place given back is another member's turn.
  if released then wake() end
  return {0, wait, members}
end
redis.call('HSET', places, ARGV[4], me)
keep(places)
if queued then redis.call('LREM', queue, 0, me) end
if ARGV[9] == '1' then redis.call('RPUSH', queue, me) end
-- Scrapy's randomisation: the delay times 1 +/- jitter (uniform), never below 0.
local gap = math.floor(math.max(0, delay * (1 + jitter * (2 * tonumber(ARGV[8]) - 1))))
if gap > 0 then redis.call('SET', gate, now + gap, 'PX', gap + 1000) end
-- Another member may go next (a place is left, or it waits for the next start).
wake()
return {1, 0, members}
"""
)

# ARGV: base, slot, me, lease. Only the owner gives a place back; a member waiting is woken.
RELEASE = (
    _LIVE
    + """
if redis.call('HGET', places, ARGV[4]) == me then redis.call('HDEL', places, ARGV[4]) end
wake()
return 0
"""
)

# ARGV: base, slot, me, then the leases this member holds in the slot. After Redis was away
# (or this member's heartbeat lapsed): its places there are exactly these again.
REGISTER = (
    _LIVE
    + """
local mine = {}
for i = 4, #ARGV do mine[ARGV[i]] = true end
local held = redis.call('HGETALL', places)
for i = 1, #held, 2 do
  if held[i + 1] == me and not mine[held[i]] then redis.call('HDEL', places, held[i]) end
end
for lease in pairs(mine) do redis.call('HSET', places, lease, me) end
if #ARGV >= 4 then keep(places) end
return 0
"""
)

# ARGV: base, slot, me. This member waits no more in the slot (nothing of it waits, or it
# closes): out of the queue, its places given back, its declaration withdrawn when it closes
# (ARGV[4] = 1).
LEAVE = (
    _LIVE
    + """
redis.call('LREM', queue, 0, me)
if ARGV[4] == '1' then
  redis.call('HDEL', decl, me)
  local held = redis.call('HGETALL', places)
  for i = 1, #held, 2 do
    if held[i + 1] == me then redis.call('HDEL', places, held[i]) end
  end
end
wake()
return 0
"""
)

# ARGV: base, slot, me (any name). The slot as the fleet sees it: places taken by live members,
# ms until the next start, live members that declared, the limit, the delay (ms), waiting members.
STATE = (
    _LIVE
    + """
local limit, delay, members = -1, 0, 0
local declared = redis.call('HGETALL', decl)
for i = 1, #declared, 2 do
  if live(declared[i]) then
    members = members + 1
    local c, d = string.match(declared[i + 1], '^(%S+) (%S+)')
    c, d = tonumber(c), tonumber(d)
    if limit < 0 or c < limit then limit = c end
    if d > delay then delay = d end
  end
end
local count = 0
local held = redis.call('HGETALL', places)
for i = 1, #held, 2 do
  if live(held[i + 1]) then count = count + 1 end
end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local start = tonumber(redis.call('GET', gate) or '0')
local waiting = 0
for _, member in ipairs(redis.call('LRANGE', queue, 0, -1)) do
  if live(member) then waiting = waiting + 1 end
end
return {count, math.max(0, start - now), members, limit, delay, waiting}
"""
)
