-- Wireshark dissector for VDIF frames over UDP, with or without the VTP packet sequence
-- number in front (doc/vdif.md, capture/vdif/header.*): every header field of the 32-byte and
-- the legacy 16-byte header, the extended user data of the registered EDVs (1 NICT, 2 ALMA,
-- 3 VLBA, 4 multiplexed with a validity mask; others shown as raw words), the derived sizes,
-- the absolute frame index and the frame's absolute time.
--
-- VDIF headers do not carry the frame rate: the time within the second needs it, from the
-- preference "Frames per second" (as `streams.frames_per_second` in a rocecap run file), or,
-- when that is 0, from the sample rate of an EDV 1 or 3 header. Without either, the frame time
-- is left out (an expert note says why).
--
-- Load it with `tshark -X lua_script:vdif.lua` or from Wireshark's Lua plugin folder (the
-- rocecap package installs it there). Preferences (Edit > Preferences > Protocols > VDIF): the
-- heuristic on every UDP datagram (on by default: VDIF has no sync word, so a datagram is VDIF
-- when the header's own length field is the datagram's, with or without VTP, and its version is
-- 0 or 1, as rocecap checks), UDP ports to decode as VDIF, VTP (auto, always, never) and the
-- frames per second. Checked against `rocecap inspect` by tests/tools/wireshark_dissectors_test.sh.

local vdif = Proto("vdif", "VDIF frame")

local f = {
  vtp_psn = ProtoField.uint64("vdif.vtp_psn", "VTP packet sequence number"),
  invalid = ProtoField.bool("vdif.invalid", "Invalid data"),
  legacy = ProtoField.bool("vdif.legacy", "Legacy header (16 bytes)"),
  seconds = ProtoField.uint32("vdif.seconds", "Seconds from the reference epoch"),
  unassigned = ProtoField.uint8("vdif.unassigned", "Unassigned (word 1 bits 30-31)"),
  epoch = ProtoField.uint8("vdif.epoch", "Reference epoch (half-years since 2000)"),
  epoch_date = ProtoField.string("vdif.epoch_date", "Reference epoch date"),
  frame = ProtoField.uint32("vdif.frame", "Data frame number within the second"),
  version = ProtoField.uint8("vdif.version", "VDIF version"),
  log2_nchan = ProtoField.uint8("vdif.log2_nchan", "log2(channels)"),
  nchan = ProtoField.uint32("vdif.nchan", "Channels"),
  frame_length = ProtoField.uint32("vdif.frame_length", "Frame length (8-byte units, header included)"),
  complex = ProtoField.bool("vdif.complex", "Complex data"),
  nbits = ProtoField.uint8("vdif.nbits", "Bits per sample (field + 1)"),
  thread = ProtoField.uint16("vdif.thread", "Thread id"),
  station = ProtoField.uint16("vdif.station", "Station id", base.HEX),
  station_name = ProtoField.string("vdif.station_name", "Station"),
  edv = ProtoField.uint8("vdif.edv", "Extended data version (EDV)", base.HEX),
  eud = ProtoField.uint32("vdif.eud", "Extended user data word", base.HEX),
  -- EDV 1 (NICT) and 3 (VLBA): sample rate and sync word.
  sample_unit = ProtoField.string("vdif.sample_unit", "Sample rate unit"),
  sample_rate = ProtoField.uint32("vdif.sample_rate", "Sample rate (field)"),
  edv_sync = ProtoField.uint32("vdif.edv_sync", "EDV sync word", base.HEX),
  das_id = ProtoField.string("vdif.edv1.das_id", "DAS id"),
  -- EDV 2 (ALMA).
  alma_pol = ProtoField.uint8("vdif.edv2.pol", "Polarisation"),
  alma_quadrant = ProtoField.uint8("vdif.edv2.bl_quadrant", "Baseline board quadrant"),
  alma_correlator = ProtoField.uint8("vdif.edv2.bl_correlator", "Baseline correlator"),
  alma_sync = ProtoField.uint32("vdif.edv2.sync", "Sync pattern", base.HEX),
  alma_pic = ProtoField.uint32("vdif.edv2.pic_status", "PIC status", base.HEX),
  alma_psn = ProtoField.uint64("vdif.edv2.psn", "Packet serial number"),
  -- EDV 3 (VLBA).
  loif = ProtoField.uint32("vdif.edv3.loif_tuning", "LO/IF tuning word"),
  dbe_unit = ProtoField.uint8("vdif.edv3.dbe_unit", "DBE unit"),
  if_nr = ProtoField.uint8("vdif.edv3.if_nr", "IF input number"),
  subband = ProtoField.uint8("vdif.edv3.subband", "Subband"),
  sideband = ProtoField.string("vdif.edv3.sideband", "Sideband"),
  major_rev = ProtoField.uint8("vdif.edv3.major_rev", "Major revision"),
  minor_rev = ProtoField.uint8("vdif.edv3.minor_rev", "Minor revision"),
  personality = ProtoField.uint8("vdif.edv3.personality", "Personality type", base.HEX),
  -- EDV 4 (multiplexed data with a validity mask).
  mask_length = ProtoField.uint8("vdif.edv4.mask_length", "Validity mask length"),
  validity_mask = ProtoField.uint64("vdif.edv4.validity_mask", "Validity mask", base.HEX),
  -- Derived.
  header_bytes = ProtoField.uint8("vdif.header_bytes", "Header bytes"),
  frame_bytes = ProtoField.uint32("vdif.frame_bytes", "Frame bytes"),
  data_bytes = ProtoField.uint32("vdif.data_bytes", "Data bytes"),
  samples_per_frame = ProtoField.uint32("vdif.samples_per_frame", "Samples per channel per frame"),
  frames_per_second = ProtoField.uint32("vdif.frames_per_second", "Frames per second"),
  frame_index = ProtoField.uint64("vdif.frame_index", "Absolute frame index"),
  time = ProtoField.absolute_time("vdif.time", "Frame time", base.UTC),
  data = ProtoField.bytes("vdif.data", "Data"),
}
vdif.fields = {}
for _, v in pairs(f) do table.insert(vdif.fields, v) end

local e_size = ProtoExpert.new("vdif.size_mismatch", "Frame length differs from the datagram",
  expert.group.MALFORMED, expert.severity.WARN)
local e_rate = ProtoExpert.new("vdif.no_rate",
  "No frame time: frames per second unknown (set the VDIF preference, or an EDV 1/3 sample rate)",
  expert.group.PROTOCOL, expert.severity.NOTE)
vdif.experts = { e_size, e_rate }

vdif.prefs.heuristic = Pref.bool("Detect VDIF on any UDP port", true,
  "Decode a UDP datagram as VDIF when its length field matches the datagram (with or without VTP)")
vdif.prefs.ports = Pref.range("UDP ports", "", "Decode these UDP ports as VDIF", 65535)
vdif.prefs.vtp = Pref.enum("VTP sequence number", 0, "Whether each datagram starts with the 8-byte VTP number",
  { { 1, "Automatic (by length)", 0 }, { 2, "Always", 1 }, { 3, "Never", 2 } })
vdif.prefs.frames_per_second = Pref.uint("Frames per second", 0,
  "Frames per second of every thread (not in VDIF headers); 0: from an EDV 1/3 sample rate")

local EDV_NAMES = { [0] = "none", [1] = "NICT", [2] = "ALMA", [3] = "VLBA", [4] = "multiplexed" }

local function epoch_unix(epoch)
  local y, m = 2000 + math.floor(epoch / 2), (epoch % 2 == 0) and 1 or 7
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * ((m + 9) % 12) + 2) / 5)
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return (era * 146097 + doe - 719468) * 86400
end

local x = bit32.extract

-- Where the frame starts in the datagram (0, or 8 behind a VTP number) when its header says
-- it fills the datagram exactly; nil when it does not look like VDIF.
local function frame_offset(tvb)
  local mode = vdif.prefs.vtp
  local offsets = (mode == 1 and { 8 }) or (mode == 2 and { 0 }) or { 0, 8 }
  for _, off in ipairs(offsets) do
    local len = tvb:len() - off
    if len >= 16 then
      local w0, w2 = tvb(off, 4):le_uint(), tvb(off + 8, 4):le_uint()
      local hb = x(w0, 30) == 1 and 16 or 32
      local bytes = x(w2, 0, 24) * 8
      if len >= hb and bytes == len and bytes > hb and x(w2, 29, 3) <= 1 then return off end
    end
  end
  return nil
end

local function station_name(id)
  local a, b = bit32.rshift(id, 8), bit32.band(id, 0xFF)
  local function c(v) return (v >= 32 and v < 127) and string.char(v) or "?" end
  return c(a) .. c(b)
end

local function add_rate(tree, w4, r4, r5)
  local unit = x(w4, 23) == 1 and "MHz" or "kHz"
  tree:add(f.sample_unit, r4, unit)
  tree:add_le(f.sample_rate, r4, x(w4, 0, 23))
  tree:add_le(f.edv_sync, r5)
end

-- Samples per second per channel an EDV 1/3 header states: the field counts complex samples,
-- or half the real samples (the VLBA's convention, as baseband reads it).
local function edv_sample_rate(w4, complex)
  local scale = x(w4, 23) == 1 and 1e6 or 1e3
  return x(w4, 0, 23) * scale * (complex and 1 or 2)
end

local function add_edv(tree, tvb, o, edv)
  local w4, w7 = tvb(o + 16, 4):le_uint(), tvb(o + 28, 4):le_uint()
  local r4, r5, r6, r7 = tvb(o + 16, 4), tvb(o + 20, 4), tvb(o + 24, 4), tvb(o + 28, 4)
  local sub = tree:add(vdif, tvb(o + 16, 16), "Extended user data, EDV " .. edv .. " (" ..
    (EDV_NAMES[edv] or "not decoded") .. ")")
  if edv == 1 then
    add_rate(sub, w4, r4, r5)
    sub:add(f.das_id, tvb(o + 24, 8), tvb(o + 24, 8):string())
  elseif edv == 2 then
    sub:add_le(f.alma_pol, r4, x(w4, 0, 1))
    sub:add_le(f.alma_quadrant, r4, x(w4, 1, 2))
    sub:add_le(f.alma_correlator, r4, x(w4, 3, 1))
    sub:add_le(f.alma_sync, r4, x(w4, 4, 20))
    sub:add_le(f.alma_pic, r5)
    sub:add_le(f.alma_psn, tvb(o + 24, 8))
  elseif edv == 3 then
    add_rate(sub, w4, r4, r5)
    sub:add_le(f.loif, r6)
    sub:add_le(f.dbe_unit, r7, x(w7, 24, 4))
    sub:add_le(f.if_nr, r7, x(w7, 20, 4))
    sub:add_le(f.subband, r7, x(w7, 17, 3))
    sub:add(f.sideband, r7, x(w7, 16) == 1 and "upper" or "lower")
    sub:add_le(f.major_rev, r7, x(w7, 12, 4))
    sub:add_le(f.minor_rev, r7, x(w7, 8, 4))
    sub:add_le(f.personality, r7, x(w7, 0, 8))
  elseif edv == 4 then
    sub:add_le(f.mask_length, r4, x(w4, 16, 8))
    sub:add_le(f.edv_sync, r5)
    sub:add_le(f.validity_mask, tvb(o + 24, 8))
  else
    sub:add_le(f.eud, r4, x(w4, 0, 24))
    for k = 5, 7 do sub:add_le(f.eud, tvb(o + 4 * k, 4)) end
  end
end

local function header(tvb, o)
  local w = {}
  for k = 0, 3 do w[k] = tvb(o + 4 * k, 4):le_uint() end
  local h = {
    invalid = x(w[0], 31) == 1, legacy = x(w[0], 30) == 1, seconds = x(w[0], 0, 30),
    unassigned = x(w[1], 30, 2), epoch = x(w[1], 24, 6), frame = x(w[1], 0, 24),
    version = x(w[2], 29, 3), log2_nchan = x(w[2], 24, 5), frame_length = x(w[2], 0, 24),
    complex = x(w[3], 31) == 1, nbits = x(w[3], 26, 5) + 1, thread = x(w[3], 16, 10),
    station = x(w[3], 0, 16),
  }
  h.header_bytes = h.legacy and 16 or 32
  h.nchan = 2 ^ h.log2_nchan
  h.frame_bytes = h.frame_length * 8
  h.data_bytes = math.max(h.frame_bytes - h.header_bytes, 0)
  return h
end

local WORD_OF = { invalid = 0, legacy = 0, seconds = 0, unassigned = 1, epoch = 1, frame = 1,
  version = 2, log2_nchan = 2, frame_length = 2, complex = 3, nbits = 3, thread = 3, station = 3 }
local ORDER = { "invalid", "legacy", "seconds", "unassigned", "epoch", "frame", "version",
  "log2_nchan", "frame_length", "complex", "nbits", "thread", "station" }

local function add_timing(tree, tvb, o, h)
  local bits = h.nchan * h.nbits * (h.complex and 2 or 1)
  local spf = (h.data_bytes * 8) % bits == 0 and (h.data_bytes * 8) / bits or nil
  if spf then tree:add(f.samples_per_frame, spf):set_generated() end
  local fps = vdif.prefs.frames_per_second
  if fps == 0 and not h.legacy and spf and spf > 0 then
    local edv, w4 = tvb(o + 19, 1):uint(), tvb(o + 16, 4):le_uint()
    local rate = (edv == 1 or edv == 3) and edv_sample_rate(w4, h.complex) or 0
    if rate > 0 and rate % spf == 0 then fps = rate / spf end
  end
  if fps == 0 then
    tree:add_proto_expert_info(e_rate)
    return nil
  end
  tree:add(f.frames_per_second, fps):set_generated()
  local index = UInt64(h.seconds) * UInt64(fps) + UInt64(h.frame)
  tree:add(f.frame_index, index):set_generated()
  local ns = (UInt64(h.frame) * UInt64(1000000000) / UInt64(fps)):tonumber()
  local secs = epoch_unix(h.epoch) + h.seconds + math.floor(ns / 1e9)
  tree:add(f.time, tvb(o, 8), NSTime(secs, ns % 1e9)):set_generated()
  return index
end

local function dissect(tvb, pinfo, root, o)
  local h = header(tvb, o)
  pinfo.cols.protocol = "VDIF"
  local tree = root:add(vdif, tvb(), "VDIF frame" .. (h.legacy and " (legacy header)" or ""))
  if o == 8 then tree:add_le(f.vtp_psn, tvb(0, 8)) end
  for _, name in ipairs(ORDER) do
    tree:add_le(f[name], tvb(o + 4 * WORD_OF[name], 4), h[name])
  end
  local wrange = function(k) return tvb(o + 4 * k, 4) end
  tree:add(f.epoch_date, wrange(1), string.format("%04d-%02d-01", 2000 + math.floor(h.epoch / 2),
    (h.epoch % 2 == 0) and 1 or 7))
  tree:add(f.nchan, wrange(2), h.nchan):set_generated()
  tree:add(f.station_name, wrange(3), station_name(h.station))
  if not h.legacy and tvb:len() >= o + 32 then
    tree:add(f.edv, tvb(o + 19, 1))
    add_edv(tree, tvb, o, tvb(o + 19, 1):uint())
  end
  tree:add(f.header_bytes, h.header_bytes):set_generated()
  tree:add(f.frame_bytes, wrange(2), h.frame_bytes):set_generated()
  tree:add(f.data_bytes, wrange(2), h.data_bytes):set_generated()
  if h.frame_bytes ~= tvb:len() - o then
    tree:add_proto_expert_info(e_size, string.format("length field %d bytes, datagram holds %d",
      h.frame_bytes, tvb:len() - o))
  end
  local index = add_timing(tree, tvb, o, h)
  pinfo.cols.info = string.format("VDIF station %s thread %d sec %d frame %d%s%s%s",
    station_name(h.station), h.thread, h.seconds, h.frame,
    index and (" index " .. tostring(index)) or "", o == 8 and " (VTP)" or "",
    h.invalid and " INVALID" or "")
  if tvb:len() > o + h.header_bytes then tree:add(f.data, tvb(o + h.header_bytes)) end
  return tvb:len()
end

function vdif.dissector(tvb, pinfo, root)
  local o = frame_offset(tvb) or (vdif.prefs.vtp == 1 and 8 or 0)
  if tvb:len() < o + 16 then return 0 end
  return dissect(tvb, pinfo, root, o)
end

local function heuristic(tvb, pinfo, root)
  if not vdif.prefs.heuristic then return false end
  local o = frame_offset(tvb)
  if not o then return false end
  dissect(tvb, pinfo, root, o)
  return true
end
vdif:register_heuristic("udp", heuristic)

local registered_ports = ""
function vdif.prefs_changed()
  local udp = DissectorTable.get("udp.port")
  if registered_ports ~= "" then udp:remove(registered_ports, vdif) end
  registered_ports = tostring(vdif.prefs.ports)
  if registered_ports ~= "" then udp:add(registered_ports, vdif) end
end
