"""The Redis store's server-side logic: Lua scripts, each one atomic step (run through EVALSHA).

The rules are those of :mod:`perplexed.policy._policy` (``cool_admit``, ``cool_record``, ``window_admit``,
``spend_allows``), written again in Lua so that each decision runs on the server in one step; the tests run
both on the same tables of cases and compare.

Keys (``P`` = the store's prefix, ``h`` = a hash of the provider identity):

* provider keys, one hash tag per provider so that a script touches one cluster slot:
  ``P{p:h}:c`` cool-down (hash: ``f`` failures, ``o`` open_until, ``p`` period, ``t`` trial_until),
  ``P{p:h}:w`` rolling window (sorted set of admission times), ``P{p:h}:l`` latency samples (list),
  ``P{p:h}:k:<cache key>`` cached answer (``"<expires>\\n<json>"``), ``P{p:h}:f:<cache key>`` fill claim
  (its expiry time);
* spend keys, under their own tag: ``P{spend}:e`` entries (sorted set ticket -> time), ``:a`` amounts (hash
  ticket -> nano-USD), ``:b`` labels (hash ticket -> label), ``:s`` running sum per window (hash window ->
  nano-USD), ``:k`` each window's cursor (hash window -> time up to which entries have left that sum),
  ``:n`` the ticket counter.

Money is counted in integer nano-USD (exact in Lua's doubles up to 9 million USD). Every time comes from the
caller's clock (``ARGV``), never the server's, so a store's injected clock rules everything; Redis expiries
(``PEXPIRE``) are only a clean-up bound well past the logical expiry.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = ["ADMIT", "CLAIM_SLOT", "MEMBER_RECORD", "POLL_FILL", "RECORD", "REPLAY_WINDOW", "SCRIPTS", "SPEND_REPORT", "SPEND_RESERVE",
           "STATE", "UNDO", "Script"]


@dataclass(frozen=True, slots=True)
class Script:
    name: str
    source: str
    sha: str


def _script(name: str, body: str) -> Script:
    source = _COMMON + body
    return Script(name, source, hashlib.sha1(source.encode()).hexdigest())


_COMMON = r"""
local KEEP_MS = 8 * 86400 * 1000
local MAX_COOLDOWN = 600
local function fmt(x) return string.format('%.17g', x) end
local function num(x) if x == false or x == nil or x == '' then return nil end return tonumber(x) end

-- cool-down state ----------------------------------------------------------------------------------------
local function cool_load(key)
  local v = redis.call('HMGET', key, 'f', 'o', 'p', 't')
  return {f = num(v[1]) or 0, o = num(v[2]), p = num(v[3]) or 0, t = num(v[4])}
end
local function cool_is_default(s) return s.f == 0 and s.o == nil and s.p == 0 and s.t == nil end
local function cool_save(key, s)
  redis.call('DEL', key)
  if cool_is_default(s) then return end
  local args = {'f', fmt(s.f), 'p', fmt(s.p)}
  if s.o ~= nil then args[#args + 1] = 'o'; args[#args + 1] = fmt(s.o) end
  if s.t ~= nil then args[#args + 1] = 't'; args[#args + 1] = fmt(s.t) end
  redis.call('HSET', key, unpack(args))
  redis.call('PEXPIRE', key, KEEP_MS)
end
-- perplexed.policy._policy.cool_admit: returns verdict ('call' | 'trial' | 'cooling_down'), wait; mutates s on trial
local function cool_admit(s, now, lease, early)
  if s.o == nil then return 'call', 0 end
  if s.t ~= nil and s.t > now then return 'cooling_down', math.max(0, s.o - now) end
  if now >= s.o or early then
    s.t = now + math.max(lease, 0.001)
    return 'trial', 0
  end
  return 'cooling_down', s.o - now
end
-- perplexed.policy._policy.cool_record (cooldown_after is set): the new state
local function cool_record(s, now, health, trial, after, cds, ra)
  if health == 'answer' then return {f = 0, o = nil, p = 0, t = nil} end
  if health ~= 'failure' then
    if trial then s.t = nil end
    return s
  end
  local failures = s.f + 1
  local last = s.p
  if last == 0 then last = cds end
  if ra ~= nil and ra >= 0 then
    return {f = failures, o = now + math.min(ra, MAX_COOLDOWN), p = last, t = nil}
  end
  if trial and s.o ~= nil then
    local period = math.min(math.max(last, cds) * 2, MAX_COOLDOWN)
    return {f = failures, o = now + period, p = period, t = nil}
  end
  if s.o ~= nil then s.f = failures; return s end
  if failures >= after then
    local period = math.min(cds, MAX_COOLDOWN)
    return {f = failures, o = now + period, p = period, t = nil}
  end
  s.f = failures
  return s
end

-- rolling window (perplexed.policy._policy.window_admit) ------------------------------------------------------
local function window_now(key, now)
  -- time never goes back inside one window: an admission whose clock read is older than the newest stamp
  -- (another worker's script ran in between, or its host's clock is behind) counts from that stamp
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if last[2] ~= nil and tonumber(last[2]) > now then return tonumber(last[2]) end
  return now
end
local function window_check(key, now, limit, window)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(now - window))
  local count = redis.call('ZCARD', key)
  if count >= limit then
    local e = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')
    return false, math.max(0, tonumber(e[2]) + window - now)
  end
  return true, 0
end
local function window_add(key, now, window, member)
  redis.call('ZADD', key, fmt(now), member)
  redis.call('PEXPIRE', key, math.ceil(window * 1000) + 60000)
end

-- spend: entries + a running sum per window (advanced by a cursor) -------------------------------------
-- S = {e, a, b, s, k, n} key names
local function spend_sum_range(S, lo, hi)
  local total = 0
  local tickets = redis.call('ZRANGEBYSCORE', S.e, lo, hi)
  for first = 1, #tickets, 1000 do
    local chunk = {}
    for i = first, math.min(first + 999, #tickets) do chunk[#chunk + 1] = tickets[i] end
    local amounts = redis.call('HMGET', S.a, unpack(chunk))
    for i = 1, #amounts do total = total + (tonumber(amounts[i]) or 0) end
  end
  return total
end
local function spend_total(S, w, now)
  local start = now - tonumber(w)
  local cursor = num(redis.call('HGET', S.k, w))
  if cursor == nil then
    local total = spend_sum_range(S, '(' .. fmt(start), '+inf')
    redis.call('HSET', S.s, w, fmt(total))
    redis.call('HSET', S.k, w, fmt(start))
    return total
  end
  local total = num(redis.call('HGET', S.s, w)) or 0
  if start > cursor then
    total = total - spend_sum_range(S, '(' .. fmt(cursor), fmt(start))
    if total < 0 then total = 0 end
    redis.call('HSET', S.s, w, fmt(total))
    redis.call('HSET', S.k, w, fmt(start))
  end
  return total
end
local function spend_adjust(S, ts, delta)
  if delta == 0 then return end
  local cursors = redis.call('HGETALL', S.k)
  for i = 1, #cursors, 2 do
    if ts > tonumber(cursors[i + 1]) then
      redis.call('HINCRBYFLOAT', S.s, cursors[i], delta)
    end
  end
end
local KEEP_SPEND_S = 7 * 86400 + 3600
local function spend_prune(S, now)
  local cut = fmt(now - KEEP_SPEND_S)
  local old = redis.call('ZRANGEBYSCORE', S.e, '-inf', cut, 'LIMIT', 0, 500)
  if #old == 0 then return end
  -- every window first moves past what is pruned, so no sum keeps an amount whose entry is gone
  local windows = redis.call('HKEYS', S.k)
  for i = 1, #windows do spend_total(S, windows[i], now) end
  redis.call('ZREM', S.e, unpack(old))
  redis.call('HDEL', S.a, unpack(old))
  redis.call('HDEL', S.b, unpack(old))
end
local function spend_add(S, now, label, amount)
  spend_prune(S, now)
  local ticket = tostring(redis.call('INCR', S.n))
  redis.call('ZADD', S.e, fmt(now), ticket)
  redis.call('HSET', S.a, ticket, fmt(amount))
  redis.call('HSET', S.b, ticket, label)
  spend_adjust(S, now, amount)
  return ticket
end
local function spend_settle(S, ticket, cost)
  local old = num(redis.call('HGET', S.a, ticket))
  if old == nil then return end
  local ts = tonumber(redis.call('ZSCORE', S.e, ticket))
  redis.call('HSET', S.a, ticket, fmt(cost))
  spend_adjust(S, ts, cost - old)
end
-- ARGV[first] = number of limits, then window, limit pairs (nano-USD)
local function spend_allows(S, now, price, first)
  local n = tonumber(ARGV[first])
  for i = 0, n - 1 do
    local w = ARGV[first + 1 + 2 * i]
    local limit = tonumber(ARGV[first + 2 + 2 * i])
    if spend_total(S, w, now) + price > limit then return false end
  end
  return true
end
local function spend_keys(base)
  return {e = KEYS[base], a = KEYS[base + 1], b = KEYS[base + 2], s = KEYS[base + 3], k = KEYS[base + 4],
          n = KEYS[base + 5]}
end

-- cache entries: "<expires>\n<payload>" -------------------------------------------------------------------
local function cache_get(key, now)
  local v = redis.call('GET', key)
  if not v then return nil end
  local i = string.find(v, '\n', 1, true)
  if i and tonumber(string.sub(v, 1, i - 1)) > now then return string.sub(v, i + 1) end
  redis.call('DEL', key)
  return nil
end
"""

ADMIT = _script("admit", r"""
-- KEYS: 1 cache 2 fill 3 cool 4 window [5..10 spend: e a b s k n]
-- ARGV: 1 now 2 has_cache 3 claim_fill 4 fill_lease_s 5 over_call_budget 6 cooldown 7 trial_lease_s
--       8 early_trial 9 rate_limit (0 = none) 10 window_s 11 member 12 price (nano) 13 label
--       14 with_spend ('1': reserve here; '0': the caller reserves in another script) 15.. spend limits
local now = tonumber(ARGV[1])
local has_cache = ARGV[2] == '1'
if has_cache then
  local hit = cache_get(KEYS[1], now)
  if hit then return {'cached', hit} end
end
if ARGV[5] == '1' then return {'over_budget'} end
local claim = has_cache and ARGV[3] == '1'
if claim then
  local until_ = num(redis.call('GET', KEYS[2]))
  if until_ ~= nil and until_ > now then return {'fill_pending', fmt(until_ - now)} end
end
local cool = nil
local trial = false
if ARGV[6] == '1' then
  cool = cool_load(KEYS[3])
  local verdict, wait = cool_admit(cool, now, tonumber(ARGV[7]), ARGV[8] == '1')
  if verdict == 'cooling_down' then return {'cooling_down', fmt(wait)} end
  trial = verdict == 'trial'
end
local limit = tonumber(ARGV[9])
local window = tonumber(ARGV[10])
local stamp = now
if limit > 0 then
  stamp = window_now(KEYS[4], now)
  local ok, wait = window_check(KEYS[4], stamp, limit, window)
  if not ok then return {'rate_limited', fmt(wait)} end
end
local price = tonumber(ARGV[12])
local with_spend = ARGV[14] == '1'
local S = nil
if with_spend and price > 0 then
  S = spend_keys(5)
  if not spend_allows(S, now, price, 15) then return {'over_budget'} end
end
-- everything passed: take the slot, the lease, the claim and the money together
if limit > 0 then window_add(KEYS[4], stamp, window, ARGV[11]) end
if trial then cool_save(KEYS[3], cool) end
if claim then
  local lease = tonumber(ARGV[4])
  redis.call('SET', KEYS[2], fmt(now + lease), 'PX', math.ceil(lease * 1000) + 1000)
end
local ticket = ''
if S ~= nil then ticket = spend_add(S, now, ARGV[13], price) end
return {'call', '', ticket, trial and '1' or '0', claim and '1' or '0'}
""")

SPEND_RESERVE = _script("spend_reserve", r"""
-- cluster mode, second step of an admission: KEYS 1..6 spend (e a b s k n)
-- ARGV: 1 now 2 price (nano) 3 label 4.. spend limits
local now = tonumber(ARGV[1])
local price = tonumber(ARGV[2])
local S = spend_keys(1)
if not spend_allows(S, now, price, 4) then return {'over_budget'} end
return {'call', spend_add(S, now, ARGV[3], price)}
""")

UNDO = _script("undo", r"""
-- cluster mode: the spend step refused: give back what the provider step took
-- KEYS: 1 fill 2 cool 3 window; ARGV: 1 member 2 trial 3 claimed
redis.call('ZREM', KEYS[3], ARGV[1])
if ARGV[2] == '1' then redis.call('HDEL', KEYS[2], 't') end
if ARGV[3] == '1' then redis.call('DEL', KEYS[1]) end
return 1
""")

RECORD = _script("record", r"""
-- KEYS: 1 cache 2 fill 3 cool 4 latency 5 window [6..11 spend: e a b s k n]
-- ARGV: 1 now 2 provider part ('1'/'0') 3 cooldown_after ('' = off) 4 health 5 trial 6 cooldown_s
--       7 retry_after_s ('' = none) 8 ttl_s ('' = no cache write) 9 payload 10 release_fill
--       11 latency_ms ('' = none) 12 spend part ('1'/'0') 13 ticket ('' = none) 14 cost (nano) 15 label
--       16 window member ('' = none)
local now = tonumber(ARGV[1])
if ARGV[2] == '1' then
  if ARGV[16] ~= '' then
    -- the call has ended: its slot stays taken until a window after its END (its arrival at the provider
    -- lies between admission and end), so arrivals, not only admissions, keep the limit
    local admitted = num(redis.call('ZSCORE', KEYS[5], ARGV[16]))
    if admitted ~= nil and now > admitted then redis.call('ZADD', KEYS[5], 'XX', fmt(now), ARGV[16]) end
  end
  local after = num(ARGV[3])
  if after ~= nil then
    local state = cool_load(KEYS[3])
    local health = ARGV[4]
    if not cool_is_default(state) or health == 'failure' then
      local new = cool_record(state, now, health, ARGV[5] == '1', after, tonumber(ARGV[6]), num(ARGV[7]))
      cool_save(KEYS[3], new)
    end
  end
  local ttl = num(ARGV[8])
  if ttl ~= nil and ttl > 0 then
    redis.call('SET', KEYS[1], fmt(now + ttl) .. '\n' .. ARGV[9], 'PX', math.ceil(ttl * 1000) + 1000)
  end
  if ARGV[10] == '1' then redis.call('DEL', KEYS[2]) end
  local latency = num(ARGV[11])
  if latency ~= nil then
    redis.call('LPUSH', KEYS[4], fmt(latency))
    redis.call('LTRIM', KEYS[4], 0, 99)
    redis.call('PEXPIRE', KEYS[4], KEEP_MS)
  end
end
if ARGV[12] == '1' then
  local S = spend_keys(6)
  local cost = tonumber(ARGV[14])
  if ARGV[13] ~= '' then
    spend_settle(S, ARGV[13], cost)
  elseif cost > 0 then
    spend_add(S, now, ARGV[15], cost)
  end
end
return 1
""")

SPEND_REPORT = _script("spend_report", r"""
-- KEYS: 1..6 spend (e a b s k n); ARGV: 1 now 2 window_s -> flat {label, nano, ...}
local now = tonumber(ARGV[1])
local S = spend_keys(1)
local tickets = redis.call('ZRANGEBYSCORE', S.e, '(' .. fmt(now - tonumber(ARGV[2])), '+inf')
local per = {}
local order = {}
local batch = 1000
for first = 1, #tickets, batch do
  local chunk = {}
  for i = first, math.min(first + batch - 1, #tickets) do chunk[#chunk + 1] = tickets[i] end
  local amounts = redis.call('HMGET', S.a, unpack(chunk))
  local labels = redis.call('HMGET', S.b, unpack(chunk))
  for i = 1, #chunk do
    local amount = tonumber(amounts[i]) or 0
    local label = labels[i]
    if label and amount ~= 0 then
      if per[label] == nil then per[label] = 0; order[#order + 1] = label end
      per[label] = per[label] + amount
    end
  end
end
local out = {}
for _, label in ipairs(order) do
  if per[label] > 0 then out[#out + 1] = label; out[#out + 1] = fmt(per[label]) end
end
return out
""")

STATE = _script("state", r"""
-- KEYS: 1 cool 2 window; ARGV: 1 now 2 window_s ('' = none) -> {f, o, p, t, calls}
local now = tonumber(ARGV[1])
local s = cool_load(KEYS[1])
local calls = 0
local w = num(ARGV[2])
if w ~= nil then calls = redis.call('ZCOUNT', KEYS[2], '(' .. fmt(now - w), '+inf') end
local function opt(x) if x == nil then return '' end return fmt(x) end
return {fmt(s.f), opt(s.o), fmt(s.p), opt(s.t), tostring(calls)}
""")

POLL_FILL = _script("poll_fill", r"""
-- KEYS: 1 cache 2 fill; ARGV: 1 now -> {'hit', payload} | {'pending'} | {'gone'}
local now = tonumber(ARGV[1])
local hit = cache_get(KEYS[1], now)
if hit then return {'hit', hit} end
local until_ = num(redis.call('GET', KEYS[2]))
if until_ ~= nil and until_ > now then return {'pending'} end
return {'gone'}
""")

CLAIM_SLOT = _script("claim_slot", r"""
-- KEYS: the fleet's slot keys (one hash tag); ARGV: 1 token 2 lease ms 3 the slot it held last (0-based, or
-- '') -> the slot held (0-based), or -1. A member keeps (and extends) the slot it holds, else takes back the
-- one it held (a restarted server forgot the leases) if free, else a free one: no two members hold one slot
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then redis.call('PEXPIRE', KEYS[i], ARGV[2]); return i - 1 end
end
local last = tonumber(ARGV[3] or '')
if last ~= nil and last >= 0 and last < #KEYS and redis.call('SET', KEYS[last + 1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return last
end
for i = 1, #KEYS do
  if redis.call('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[2]) then return i - 1 end
end
return -1
""")

REPLAY_WINDOW = _script("replay_window", r"""
-- KEYS: 1 window; ARGV: 1 window_s, then (time, member) pairs: calls a member admitted in-process during an
-- outage, added to the shared window when the store is back (so the fleet does not spend the window twice)
for i = 2, #ARGV, 2 do redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[1]) * 1000) + 60000)
return 1
""")

MEMBER_RECORD = _script("member_record", r"""
-- strategy="adaptive": perplexed.policy._policy.member_update on the member's hash (o ok, c calls, l latency, x cost,
-- n total). KEYS: 1 member hash. ARGV: 1 ok ('1'/'0') 2 latency_ms ('' = none) 3 cost 4 decay
local v = redis.call('HMGET', KEYS[1], 'o', 'c', 'l', 'x', 'n')
local d = tonumber(ARGV[4])
local n = num(v[5]) or 0
local ok = (ARGV[1] == '1') and 1 or 0
local latency = num(ARGV[2])
local cost = tonumber(ARGV[3])
local old_l = num(v[3])
if latency == nil then latency = old_l elseif old_l ~= nil then latency = old_l * d + latency * (1 - d) end
if n > 0 then cost = (num(v[4]) or 0) * d + cost * (1 - d) end
local args = {'o', fmt((num(v[1]) or 0) * d + ok), 'c', fmt((num(v[2]) or 0) * d + 1), 'x', fmt(cost),
              'n', tostring(n + 1)}
if latency ~= nil then table.insert(args, 'l'); table.insert(args, fmt(latency)) end
redis.call('HSET', KEYS[1], unpack(args))
redis.call('PEXPIRE', KEYS[1], KEEP_MS)
return 1
""")

SCRIPTS = (ADMIT, SPEND_RESERVE, UNDO, RECORD, SPEND_REPORT, STATE, POLL_FILL, CLAIM_SLOT, REPLAY_WINDOW,
           MEMBER_RECORD)
