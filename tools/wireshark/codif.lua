-- Wireshark dissector for CODIF frames over UDP (one frame per datagram), as rocecap reads
-- them (doc/codif.md, capture/codif/header.*): every header field of the current layout (v3,
-- sync 0xFEEDCAFE in word 5 bits 0-31) and of codifio's older one (v1, sync 0xABADDEED in word 5
-- bits 32-63), the derived sizes, the absolute frame index and the frame's absolute time.
--
-- Load it with `tshark -X lua_script:codif.lua` or from Wireshark's Lua plugin folder (the
-- rocecap package installs it there). Preferences (Edit > Preferences > Protocols > CODIF):
-- the heuristic on every UDP datagram (on by default: a datagram is CODIF when its sync word is
-- one of the accepted ones), UDP ports to decode as CODIF whatever they hold, and one more
-- accepted sync word with its layout (some hardware sends 0xADEADBEE).
--
-- Fields: codif.<name>; `tshark -G fields | grep codif` lists them. Checked against
-- `rocecap inspect` by tests/tools/wireshark_dissectors_test.sh.

local codif = Proto("codif", "CODIF frame")

local LAYOUTS = { [3] = "v3", [1] = "v1" }

local f = {
  layout = ProtoField.string("codif.layout", "Header layout"),
  frame = ProtoField.uint32("codif.frame", "Frame number within the period"),
  seconds = ProtoField.uint32("codif.seconds", "Seconds since the epoch (period start)"),
  epoch = ProtoField.uint8("codif.epoch", "Reference epoch (half-years since 2000)"),
  epoch_date = ProtoField.string("codif.epoch_date", "Reference epoch date"),
  nbits = ProtoField.uint8("codif.nbits", "Bits per sample"),
  atypical = ProtoField.bool("codif.atypical", "Atypical"),
  invalid = ProtoField.bool("codif.invalid", "Invalid"),
  complex = ProtoField.bool("codif.complex", "Complex samples"),
  cal = ProtoField.bool("codif.cal", "Calibration enabled"),
  representation = ProtoField.uint8("codif.representation", "Sample representation"),
  version = ProtoField.uint8("codif.version", "Version"),
  protocol = ProtoField.uint8("codif.protocol", "Protocol"),
  period = ProtoField.uint16("codif.period", "Period (seconds)"),
  thread = ProtoField.uint16("codif.thread", "Thread id"),
  group = ProtoField.uint16("codif.group", "Group id"),
  secondary = ProtoField.uint16("codif.secondary", "Secondary id"),
  station = ProtoField.uint16("codif.station", "Station id", base.HEX),
  station_name = ProtoField.string("codif.station_name", "Station"),
  nchan = ProtoField.uint32("codif.nchan", "Channels"),
  block_length = ProtoField.uint16("codif.block_length", "Sample block length"),
  data_words = ProtoField.uint32("codif.data_words", "Data length (8-byte units)"),
  total_samples = ProtoField.uint64("codif.total_samples", "Samples per channel per period"),
  sync = ProtoField.uint32("codif.sync", "Sync word", base.HEX),
  metadata_id = ProtoField.uint32("codif.metadata_id", "Metadata id", base.HEX),
  metadata = ProtoField.uint64("codif.metadata", "Metadata word", base.HEX),
  data_bytes = ProtoField.uint32("codif.data_bytes", "Data bytes"),
  samples_per_frame = ProtoField.uint64("codif.samples_per_frame", "Samples per channel per frame"),
  frames_per_period = ProtoField.uint64("codif.frames_per_period", "Frames per period"),
  frame_index = ProtoField.uint64("codif.frame_index", "Absolute frame index"),
  time = ProtoField.absolute_time("codif.time", "Frame time", base.UTC),
  data = ProtoField.bytes("codif.data", "Data"),
}
codif.fields = {}
for _, v in pairs(f) do table.insert(codif.fields, v) end

local e_size = ProtoExpert.new("codif.size_mismatch", "Frame size differs from the datagram",
  expert.group.MALFORMED, expert.severity.WARN)
local e_timing = ProtoExpert.new("codif.bad_timing",
  "No frame time: zero period, channels or bits, or samples not a whole number of frames",
  expert.group.PROTOCOL, expert.severity.WARN)
codif.experts = { e_size, e_timing }

codif.prefs.heuristic = Pref.bool("Detect CODIF on any UDP port", true,
  "Decode a UDP datagram as CODIF when it starts with a 64-byte header holding an accepted sync word")
codif.prefs.ports = Pref.range("UDP ports", "", "Decode these UDP ports as CODIF", 65535)
codif.prefs.extra_sync = Pref.string("Extra sync word", "",
  "One more accepted sync word in hex (e.g. 0xADEADBEE); empty for none")
codif.prefs.extra_layout = Pref.enum("Extra sync word's layout", 3, "Header layout of frames with the extra sync word",
  { { 1, "v3 (sync in word 5 bits 0-31)", 3 }, { 2, "v1 (sync in word 5 bits 32-63)", 1 } })

-- Unix seconds of 1 January or 1 July of 2000 + epoch / 2 (days from the civil date).
local function epoch_unix(epoch)
  local y, m = 2000 + math.floor(epoch / 2), (epoch % 2 == 0) and 1 or 7
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = math.floor((153 * mp + 2) / 5)
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return (era * 146097 + doe - 719468) * 86400
end

local function epoch_date(epoch)
  return string.format("%04d-%02d-01", 2000 + math.floor(epoch / 2), (epoch % 2 == 0) and 1 or 7)
end

-- The 32-bit halves of the eight little-endian 64-bit words: w[k].lo, w[k].hi.
local function words(tvb)
  local w = {}
  for k = 0, 7 do
    w[k] = { lo = tvb(8 * k, 4):le_uint(), hi = tvb(8 * k + 4, 4):le_uint(),
             rlo = tvb(8 * k, 4), rhi = tvb(8 * k + 4, 4), r = tvb(8 * k, 8) }
  end
  return w
end

local x = bit32.extract

local function decode_v3(w)
  return {
    layout = "v3", frame = { w[0].lo, w[0].rlo }, seconds = { w[0].hi, w[0].rhi },
    epoch = { x(w[1].lo, 0, 8), w[1].rlo }, nbits = { x(w[1].lo, 8, 8), w[1].rlo },
    atypical = { x(w[1].lo, 16) == 1, w[1].rlo }, invalid = { x(w[1].lo, 17) == 1, w[1].rlo },
    complex = { x(w[1].lo, 18) == 1, w[1].rlo }, cal = { x(w[1].lo, 19) == 1, w[1].rlo },
    representation = { x(w[1].lo, 20, 4), w[1].rlo }, version = { x(w[1].lo, 24, 5), w[1].rlo },
    protocol = { x(w[1].lo, 29, 3), w[1].rlo }, period = { x(w[1].hi, 16, 16), w[1].rhi },
    thread = { x(w[2].lo, 0, 16), w[2].rlo }, group = { x(w[2].lo, 16, 16), w[2].rlo },
    secondary = { x(w[2].hi, 0, 16), w[2].rhi }, station = { x(w[2].hi, 16, 16), w[2].rhi },
    nchan = { x(w[3].lo, 0, 16), w[3].rlo }, block_length = { x(w[3].lo, 16, 16), w[3].rlo },
    data_words = { w[3].hi, w[3].rhi }, sync = { w[5].lo, w[5].rlo },
    metadata_id = { w[5].hi, w[5].rhi },
  }
end

local function decode_v1(w)
  return {
    layout = "v1", frame = { w[0].lo, w[0].rlo }, seconds = { x(w[0].hi, 0, 30), w[0].rhi },
    complex = { x(w[0].hi, 30) == 1, w[0].rhi }, invalid = { x(w[0].hi, 31) == 1, w[0].rhi },
    station = { x(w[1].lo, 0, 16), w[1].rlo }, representation = { x(w[1].lo, 22, 4), w[1].rlo },
    epoch = { x(w[1].lo, 26, 6), w[1].rlo }, data_words = { x(w[1].hi, 0, 24), w[1].rhi },
    nbits = { x(w[1].hi, 24, 5), w[1].rhi }, version = { x(w[1].hi, 29, 3), w[1].rhi },
    group = { x(w[2].lo, 0, 16), w[2].rlo }, thread = { x(w[2].lo, 16, 16), w[2].rlo },
    nchan = { x(w[2].hi, 0, 16) + 1, w[2].rhi }, block_length = { x(w[2].hi, 16, 16), w[2].rhi },
    period = { x(w[3].hi, 0, 16), w[3].rhi }, sync = { w[5].hi, w[5].rhi },
  }
end

-- Which layout the sync word says, or nil: the defaults, then the extra word of the prefs.
local function layout_of(tvb)
  if tvb:len() < 64 then return nil end
  local lo, hi = tvb(40, 4):le_uint(), tvb(44, 4):le_uint()
  local extra = tonumber((codif.prefs.extra_sync:gsub("^0[xX]", "")), 16) or 0
  if lo == 0xFEEDCAFE then return 3 end
  if hi == 0xABADDEED then return 1 end
  if extra ~= 0 and codif.prefs.extra_layout == 3 and lo == extra then return 3 end
  if extra ~= 0 and codif.prefs.extra_layout == 1 and hi == extra then return 1 end
  return nil
end

-- Samples per frame, frames per period, absolute index and start time (NSTime), or nil when the
-- header cannot be timed (as rocecap's validation: zero fields, fractions).
local function timing(h, total)
  local bits = h.nchan[1] * h.nbits[1] * (h.complex[1] and 2 or 1)
  local payload_bits = h.data_words[1] * 64
  if bits == 0 or h.period[1] == 0 or payload_bits % bits ~= 0 then return nil end
  local spf = UInt64(payload_bits / bits)
  if spf == UInt64(0) or total % spf ~= UInt64(0) then return nil end
  local fpp = total / spf
  if fpp == UInt64(0) then return nil end
  local period = h.period[1]
  local index = UInt64(math.floor(h.seconds[1] / period)) * fpp + UInt64(h.frame[1])
  -- floor(frame x period x 1e9 / fpp) without overflow: whole periods apart, then the rest.
  local fp = UInt64(h.frame[1]) * UInt64(period)
  local whole = fp / fpp
  local ns = (fp % fpp) * UInt64(1000000000) / fpp
  local secs = epoch_unix(h.epoch[1]) + h.seconds[1] + whole:tonumber()
  return spf, fpp, index, NSTime(secs, ns:tonumber())
end

local function station_name(id)
  local a, b = bit32.rshift(id, 8), bit32.band(id, 0xFF)
  local function c(v) return (v >= 32 and v < 127) and string.char(v) or "?" end
  return c(a) .. c(b)
end

local FIELD_ORDER = { "frame", "seconds", "epoch", "nbits", "atypical", "invalid", "complex", "cal",
  "representation", "version", "protocol", "period", "thread", "group", "secondary", "station",
  "nchan", "block_length", "data_words", "sync", "metadata_id" }

local function add_header(tree, tvb, h, w)
  tree:add(f.layout, tvb(40, 8), h.layout)
  for _, name in ipairs(FIELD_ORDER) do
    local v = h[name]
    if v ~= nil then tree:add_le(f[name], v[2], v[1]) end
  end
  tree:add(f.epoch_date, h.epoch[2], epoch_date(h.epoch[1]))
  tree:add(f.station_name, h.station[2], station_name(h.station[1]))
  local total = w[4].r:le_uint64()
  tree:add_le(f.total_samples, w[4].r)
  if h.layout == "v3" then
    tree:add_le(f.metadata, w[6].r)
    tree:add_le(f.metadata, w[7].r)
  end
  return total
end

local function dissect(tvb, pinfo, root, layout)
  local w = words(tvb)
  local h = layout == 3 and decode_v3(w) or decode_v1(w)
  pinfo.cols.protocol = "CODIF"
  local tree = root:add(codif, tvb(), "CODIF frame (" .. h.layout .. ")")
  local total = add_header(tree, tvb, h, w)
  local data_bytes = h.data_words[1] * 8
  tree:add(f.data_bytes, w[3].r, data_bytes):set_generated()
  if data_bytes + 64 ~= tvb:len() then
    tree:add_proto_expert_info(e_size, string.format("data length %d + 64 header bytes, datagram %d",
      data_bytes, tvb:len()))
  end
  local spf, fpp, index, t = timing(h, total)
  local info = string.format("CODIF %s station %s thread %d frame %d sec %d%s", h.layout,
    station_name(h.station[1]), h.thread[1], h.frame[1], h.seconds[1], h.invalid[1] and " INVALID" or "")
  if spf then
    tree:add(f.samples_per_frame, spf):set_generated()
    tree:add(f.frames_per_period, fpp):set_generated()
    tree:add(f.frame_index, index):set_generated()
    tree:add(f.time, w[0].r, t):set_generated()
    info = info .. " index " .. tostring(index)
  else
    tree:add_proto_expert_info(e_timing)
  end
  pinfo.cols.info = info
  if tvb:len() > 64 then tree:add(f.data, tvb(64)) end
  return tvb:len()
end

function codif.dissector(tvb, pinfo, root)
  local layout = layout_of(tvb)
  if not layout then return 0 end
  return dissect(tvb, pinfo, root, layout)
end

local function heuristic(tvb, pinfo, root)
  if not codif.prefs.heuristic then return false end
  local layout = layout_of(tvb)
  if not layout then return false end
  dissect(tvb, pinfo, root, layout)
  return true
end
codif:register_heuristic("udp", heuristic)

local registered_ports = ""
function codif.prefs_changed()
  local udp = DissectorTable.get("udp.port")
  if registered_ports ~= "" then udp:remove(registered_ports, codif) end
  registered_ports = tostring(codif.prefs.ports)
  if registered_ports ~= "" then udp:add(registered_ports, codif) end
end
