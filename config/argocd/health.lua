-- Argo CD health check of summa.dev/SummaIndex, read from the conditions
-- the operator keeps (docs/api.md, "Conditions"):
--   Progressing  the operator has not seen this generation of the spec
--                yet (a change may be what unblocks a Stalled index)
--   Degraded     Stalled=True: progress is blocked until a person acts
--   Progressing  Reconciling=True (creating, draining, restarting, a
--                doctor run, a resize, a failure it retries)
--   Suspended    spec.suspend, once the engine is stopped
--   Healthy      Ready=True and nothing in progress
--   Progressing  otherwise (Ready=False without a reason to give up)
local hs = {}

local function condition(t)
  if obj.status ~= nil and obj.status.conditions ~= nil then
    for _, c in ipairs(obj.status.conditions) do
      if c.type == t then
        return c
      end
    end
  end
  return nil
end

local function say(c, fallback)
  if c ~= nil and c.message ~= nil and c.message ~= "" then
    return c.message
  end
  if c ~= nil and c.reason ~= nil and c.reason ~= "" then
    return c.reason
  end
  return fallback
end

-- verdict is the check's answer.
local function verdict(status, message)
  hs.status = status
  hs.message = message
  return hs
end

-- trueCondition is the condition of type t when its status is True.
local function trueCondition(t)
  local c = condition(t)
  if c ~= nil and c.status == "True" then
    return c
  end
  return nil
end

if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  return verdict("Progressing", "Being deleted")
end

local generation = 0
if obj.metadata ~= nil and obj.metadata.generation ~= nil then
  generation = obj.metadata.generation
end
local observed = 0
if obj.status ~= nil and obj.status.observedGeneration ~= nil then
  observed = obj.status.observedGeneration
end
if observed < generation then
  return verdict("Progressing", "Waiting for the operator to reconcile generation " .. tostring(generation))
end

local stalled = trueCondition("Stalled")
if stalled ~= nil then
  return verdict("Degraded", (stalled.reason or "Stalled") .. ": " .. say(stalled, "progress is blocked"))
end

local reconciling = trueCondition("Reconciling")
if reconciling ~= nil then
  return verdict("Progressing", say(reconciling, "Reconciling"))
end

if obj.spec ~= nil and obj.spec.suspend == true then
  return verdict("Suspended", "spec.suspend is set: the engine is stopped, the volume kept")
end

local ready = trueCondition("Ready")
if ready ~= nil then
  return verdict("Healthy", say(ready, "Ready"))
end

return verdict("Progressing", say(condition("Ready"), "Waiting for the engine to be ready"))
