"""The Lua scripts of ``RedisPlaces`` (key layout in ``_redis``); each runs atomically, so a
place is taken, given back or counted in one Redis round trip.

Every script gets the key prefix (``P fleet:``), the slot and this member first. A member is
live while its heartbeat key exists; what a member that is not live holds, declares or waits
for is removed by the first script that reads it (a dead member's places come back then).
"""

# Shared by every script: the slot's keys; which members are live (this one always is, to
# itself), memoised per run; what live members declare and hold (a dead member's entries are
# removed on the way); Redis's clock; a place given back.
_SLOT = """
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
-- The slot's limit is the lowest concurrency a live member declares; its spacing the longest
-- delay, with that member's jitter (each member declares what its own settings say). Returns
-- limit (nil: none declared), delay ms, jitter, live members that declared.
local function declared()
  local limit, delay, jitter, members = nil, 0, 0, 0
  local entries = redis.call('HGETALL', decl)
  for i = 1, #entries, 2 do
    if live(entries[i]) then
      members = members + 1
      local c, d, j = string.match(entries[i + 1], '^(%S+) (%S+) (%S+)$')
      c, d, j = tonumber(c), tonumber(d), tonumber(j)
      if limit == nil or c < limit then limit = c end
      if d > delay then delay, jitter = d, j end
    else
      redis.call('HDEL', decl, entries[i])
    end
  end
  return limit, delay, jitter, members
end
-- How many places live members hold.
local function taken()
  local count = 0
  local held = redis.call('HGETALL', places)
  for i = 1, #held, 2 do
    if live(held[i + 1]) then count = count + 1 else redis.call('HDEL', places, held[i]) end
  end
  return count
end
local function now_ms()
  local clock = redis.call('TIME')
  return tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
end
-- Give ``lease`` back if it is this member's (a release checks the owner): was it?
local function give(lease)
  if redis.call('HGET', places, lease) ~= me then return false end
  redis.call('HDEL', places, lease)
  return true
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
    _SLOT
    + """
local released = ARGV[10] ~= nil and give(ARGV[10])
redis.call('HSET', decl, me, ARGV[5] .. ' ' .. ARGV[6] .. ' ' .. ARGV[7])
keep(decl)
local limit, delay, jitter, members = declared()
local count = taken()
local head, queued = nil, false
for _, member in ipairs(redis.call('LRANGE', queue, 0, -1)) do
  if live(member) then
    head = head or member
    queued = queued or member == me
  else
    redis.call('LREM', queue, 0, member)
  end
end
local now = now_ms()
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
    _SLOT
    + """
give(ARGV[4])
wake()
return 0
"""
)

# ARGV: base, slot, me, then the leases this member holds in the slot. After Redis was away
# (or this member's heartbeat lapsed): its places there are exactly these again.
REGISTER = (
    _SLOT
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
    _SLOT
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
# ms until the next start, live members that declared, the limit (-1: none declared), the
# delay (ms), waiting members.
STATE = (
    _SLOT
    + """
local limit, delay, _, members = declared()
local start = tonumber(redis.call('GET', gate) or '0')
local waiting = 0
for _, member in ipairs(redis.call('LRANGE', queue, 0, -1)) do
  if live(member) then waiting = waiting + 1 end
end
return {taken(), math.max(0, start - now_ms()), members, limit or -1, delay, waiting}
"""
)
