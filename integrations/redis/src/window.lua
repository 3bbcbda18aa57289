-- leaparray-redis: one sliding window per limit, run atomically by Redis.
-- KEYS[1] {name}          hash: field = window id, value = permits booked;
--                         field 'epoch' = the epoch the counts belong to (a
--                         hash without it lost its counts: evicted, deleted),
--                         field 'fence' = Redis time (us) until which fresh
--                         bookings wait for restores; field 'grace' = the
--                         longest fence (us) a process of the limit needs
-- KEYS[2] {name}:epoch    string: this Redis's epoch token
-- KEYS[3] {name}:restored set: "<epoch>:<process>" of restores already applied
-- KEYS[4] {name}:run      string: the identity of the redis-server process
--                         (and its term as a master) that created or adopted
--                         the epoch (see identity())
-- No key has a TTL: under a volatile-* maxmemory-policy none is a candidate
-- for eviction, and under allkeys-* an evicted key is seen as an empty
-- Redis is (a new epoch, the fence, every process writes back; argued in
-- src/restart.rs, "Eviction"). Pruning bounds the hash.
-- ARGV: op, epoch, window_us, n_windows, grace_us (the fence of an epoch
-- this call makes, unless the hash's 'grace' is longer), then per op.
-- Every reply starts {status, now_us, epoch}; status 0 done, 1 refused by
-- the limit, 2 stale epoch (restore first), 3 fenced (restart grace).
-- Redis 3.2 to 4 need this to write after TIME; from Redis 5 on it is the
-- default (and from 7 a no-op).
if redis.replicate_commands then pcall(redis.replicate_commands) end
local op, known = ARGV[1], ARGV[2]
local window, nw = tonumber(ARGV[3]), tonumber(ARGV[4])
local now
local function fmt(x) return string.format('%.0f', x) end

-- INFO is in the ACL category @dangerous, which hardened users lack: the
-- script then fails with NOPERM naming it (`open` returns
-- Error::Permission), not with a generic script error.
local function info(section)
  local r = redis.pcall('INFO', section)
  if type(r) == 'table' and r.err then
    error({err = 'NOPERM leaparray-redis needs INFO (ACL +info): ' .. r.err})
  end
  return r
end

-- Who holds the limit's data: this redis-server process's run_id (new at
-- every start) and its replication id (new whenever the process becomes a
-- master: a promotion, a failback to the same process; taken from its
-- master while a replica), "run replid"; on Redis Cluster also the node's
-- id, "run node replid". Read when an epoch is made and by every check
-- (never by a booking). A server that is not a master (INFO replication)
-- fails with READONLY: the limit is never checked or booked on a replica.
-- Returns the identity, and INFO replication on a cluster (else nil).
local function identity()
  local rep = info('replication')
  if not string.find(rep, 'role:master', 1, true) then
    error({err = 'READONLY leaparray-redis: this Redis is not a master (INFO replication role)'})
  end
  local run = string.match(info('server'), 'run_id:(%x+)') or ''
  local replid = string.match(rep, 'master_replid:(%x+)') or ''
  if not string.find(info('cluster'), 'cluster_enabled:1', 1, true) then
    return run .. ' ' .. replid, nil
  end
  return run .. ' ' .. redis.call('CLUSTER', 'MYID') .. ' ' .. replid, rep
end

-- On a cluster, whether the data came whole by MIGRATE from the recorded
-- node (argued in src/restart.rs, "Redis Cluster: migration or
-- failover"): `vouch` (the caller's, identities "run node replid"
-- separated by commas) holds the recorded identity itself: the recorded
-- node answered the caller MOVED while a master, as the same redis-server
-- process and with the same replication id, so a master ever since it
-- recorded the epoch (a failover makes it a replica, which changes its
-- replid for good); and this node's replication history rules out a
-- replicated copy: it was never promoted since its start and neither of
-- its replids is the recorded one, or it is a former replica of the
-- recorded node itself (master_replid2), detached and flushed by CLUSTER
-- RESET.
local function migrated(stored, me, rep, vouch)
  if not rep or not stored then return false end
  local snode, srepl = string.match(stored, '^%x+ (%x+) (%x+)$')
  local mnode = string.match(me, '^%x+ (%x+) ')
  if not snode or not mnode or snode == mnode then return false end
  if not string.find(',' .. vouch .. ',', ',' .. stored .. ',', 1, true) then return false end
  -- The counters came too (one key, moved whole): a slot assigned to this
  -- node while the source still held them makes the source delete them.
  if redis.call('EXISTS', KEYS[1]) == 0 then return false end
  local known = redis.pcall('CLUSTER', 'COUNT-FAILURE-REPORTS', snode)
  if type(known) == 'table' and known.err then return false end
  if string.find(rep, 'second_repl_offset:-1', 1, true) then
    return not string.find(rep, srepl, 1, true)
  end
  return string.match(rep, 'master_replid2:(%x+)') == srepl
end

local function clock(arg)
  if arg ~= nil and arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- A new epoch; fresh bookings wait (the fence, a time in the counters
-- hash, so that it is evicted only with the counts) for every process's
-- write-back. The counts the hash holds stay counted; the restores of
-- older epochs are forgotten.
-- The fence is the longest any process of the limit needs (src/restart.rs,
-- "The fence"): the caller's (ARGV[5]: its own, or a longer one it read
-- from the hash before Redis lost it) or the hash's field 'grace', which
-- every check raises to its caller's own.
local function new_epoch(me)
  local t = redis.call('TIME')
  local e = t[1] .. t[2]
  redis.call('SET', KEYS[2], e)
  redis.call('SET', KEYS[4], me)
  redis.call('DEL', KEYS[3])
  local grace = math.max(tonumber(ARGV[5]) or 0, tonumber(redis.call('HGET', KEYS[1], 'grace')) or 0)
  redis.call('HSET', KEYS[1], 'epoch', e, 'fence', fmt(clock(nil) + grace), 'grace', fmt(grace))
  return e
end

local epoch = redis.call('GET', KEYS[2])
if not epoch or redis.call('HGET', KEYS[1], 'epoch') ~= epoch then
  -- Empty (a first start, a restart without persistence, FLUSHALL), or
  -- the counts of this epoch are gone (the hash evicted under an allkeys-*
  -- maxmemory-policy, or deleted): what a restart loses.
  epoch = new_epoch((identity()))
end

if op == 'book' then
  -- ARGV[6] limit, [7] want, [8] at least, [9] caller time or ''
  now = clock(ARGV[9])
  if epoch ~= known then return {2, fmt(now), epoch} end
  local cur = math.floor(now / window)
  local limit, want, least = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
  -- The fence (Redis's time, whatever the caller's), then windows
  -- cur-nw+1 .. cur+nw-1: every interval of nw windows holding cur.
  local fields = {'fence'}
  for i = 1, 2 * nw - 1 do fields[i + 1] = fmt(cur - nw + i) end
  local got = redis.call('HMGET', KEYS[1], unpack(fields))
  local rnow = now
  if ARGV[9] ~= nil and ARGV[9] ~= '' then rnow = clock(nil) end
  if (tonumber(got[1]) or 0) > rnow then return {3, fmt(now), epoch, fmt(cur), 0, 0} end
  local c = {}
  for i = 1, 2 * nw - 1 do c[i] = tonumber(got[i + 1]) or 0 end
  -- The load of each of the nw intervals holding cur, as a running sum:
  -- O(nw), not O(nw^2) (at nw = 1024 the nested sum took tens of ms).
  local load = 0
  for i = 1, nw do load = load + c[i] end
  local room = limit - load
  for k = 1, nw - 1 do
    load = load - c[k] + c[nw + k]
    if limit - load < room then room = limit - load end
  end
  if room < least then return {1, fmt(now), epoch, fmt(cur), 0, math.max(room, 0)} end
  local take = math.min(want, room)
  redis.call('HINCRBY', KEYS[1], fmt(cur), take)
  if redis.call('HLEN', KEYS[1]) > 4 * nw + 3 then
    -- Deletes only fields more than 2N windows from both this call's
    -- window and Redis's (TIME): a caller far from Redis's time (any time
    -- up to MAX_CALLER_TIME_US is accepted) never deletes the windows of
    -- Redis-clock callers, nor they its. What stays needed is argued in
    -- src/restart.rs ("How long a window matters"); at most 2 (4N + 1)
    -- window fields stay, and 'epoch', 'fence' and 'grace'.
    local rcur = math.floor(clock(nil) / window)
    local function far(id, c) return id < c - 2 * nw or id > c + 2 * nw end
    for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
      local id = tonumber(f)
      if id and far(id, cur) and far(id, rcur) then redis.call('HDEL', KEYS[1], f) end
    end
  end
  return {0, fmt(now), epoch, fmt(cur), take, room - take}
elseif op == 'check' then
  -- Is this still the caller's epoch, and was it made (or adopted) by this
  -- redis-server process in its current term as a master? If not, Redis
  -- restarted from persisted data (RDB, AOF), a replica took over, or the
  -- process was demoted and promoted again (a failback): what it holds
  -- may miss bookings, so it is a restart (a new epoch, the fence, every
  -- process writes back). On a cluster, data that came whole from another
  -- master by MIGRATE is adopted instead (the epoch stays): ARGV[7] holds
  -- the identities "run node replid", separated by commas, of masters that
  -- answered the caller MOVED. ARGV[6] '1' on a fresh connection: the
  -- reply's 7th element is the maxmemory-policy, the 8th 1 on a cluster.
  -- ARGV[8]: the caller's own fence (µs), recorded in the hash's 'grace'
  -- (raised, never lowered: the longest of the limit's processes, which
  -- the reply's 9th element returns and the next new epoch gets).
  local policy, cluster = '', 0
  local me, rep = identity()
  local stored = redis.call('GET', KEYS[4])
  if stored ~= me then
    if migrated(stored, me, rep, ARGV[7] or '') then
      redis.call('SET', KEYS[4], me)
    else
      epoch = new_epoch(me)
    end
  end
  -- Every check: the policy can be changed at run time (CONFIG SET).
  policy = string.match(info('memory'), 'maxmemory_policy:([%w%-]+)') or ''
  if ARGV[6] == '1' and rep then cluster = 1 end
  local grace = tonumber(redis.call('HGET', KEYS[1], 'grace')) or 0
  local need = tonumber(ARGV[8]) or 0
  if need > grace then
    -- A write only when it raises the record (once per process); under
    -- OOM it is left for the next check.
    redis.pcall('HSET', KEYS[1], 'grace', fmt(need))
    grace = need
  end
  now = clock(nil)
  local status = 0
  if epoch ~= known then status = 2 end
  return {status, fmt(now), epoch, 0, 0, 0, policy, cluster, fmt(grace)}
elseif op == 'restore' then
  -- ARGV[6] process id ('' for a flush that is not
  -- idempotent), then pairs window id, permits.
  now = clock(nil)
  if epoch ~= known then return {2, fmt(now), epoch} end
  if ARGV[6] ~= '' then
    if redis.call('SADD', KEYS[3], epoch .. ':' .. ARGV[6]) == 0 then return {0, fmt(now), epoch} end
  end
  local i = 7
  while ARGV[i] do
    redis.call('HINCRBY', KEYS[1], ARGV[i], tonumber(ARGV[i + 1]))
    i = i + 2
  end
  return {0, fmt(now), epoch}
elseif op == 'return' then
  -- ARGV[6] window id, [7] permits never used.
  now = clock(nil)
  if epoch ~= known then return {2, fmt(now), epoch} end
  local have = tonumber(redis.call('HGET', KEYS[1], ARGV[6]))
  if have then
    redis.call('HSET', KEYS[1], ARGV[6], math.max(have - tonumber(ARGV[7]), 0))
  end
  return {0, fmt(now), epoch}
end
return redis.error_reply('leaparray-redis: unknown op')
