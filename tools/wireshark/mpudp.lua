-- Wireshark dissector for mpudp, the wire format of docs/PROTOCOL.md (version 0x6d700002).
--
--   wireshark -X lua_script:tools/wireshark/mpudp.lua capture.pcap
--   tshark -X lua_script:tools/wireshark/mpudp.lua -r capture.pcap -V
--
-- What it shows without keys: the long headers whole (INITIAL with its key share, transport
-- parameters and resumption offer, RETRY, HANDSHAKE with the suite and signature or PSK proof,
-- CONFIRM with its cookie, EARLY (0-RTT data) with its CIDs, JOIN with
-- the receiver's token and the subflow number, STATELESS_RESET with its token), VERSION_NEGOTIATION, WARM, and the short
-- header's DCID; the AEAD-sealed payloads and the short header's protected bits stay opaque.
-- It does not decrypt: Wireshark's Lua API (4.0) has no AES-GCM, ChaCha20-Poly1305 or
-- header-protection primitive, and a key log would take keys out of the process for a tool
-- that cannot use them. The endpoint's qlog (PROTOCOL.md §13) has the frames instead.
--
-- The UDP port of a server whose INITIAL is seen is registered, so that its short-header
-- packets are dissected too; "Decode As" and the `mpudp.port` preference do it by hand. The
-- short header's DCID length is the receiver's `cid_len` (PROTOCOL.md §2): for packets to a
-- client whose INITIAL was seen, the one it announced (8 if none); for packets to a server, the
-- preference (4 by default: this implementation's servers; theirs is sealed in the HANDSHAKE).

local VERSION = 0x6d700002

local p = Proto("mpudp", "mpudp (Multipath TCP's logic over UDP)")

local types = {
    [0] = "INITIAL", [1] = "RETRY", [2] = "HANDSHAKE", [3] = "CONFIRM", [4] = "JOIN", [5] = "EARLY",
    [6] = "STATELESS_RESET",
}
local suites = { [1] = "ChaCha20-Poly1305", [2] = "AES-128-GCM" }
local params = {
    [1] = "max_datagram_size", [2] = "initial_window", [3] = "max_ack_delay", [4] = "idle_timeout",
    [5] = "fast_join", [6] = "aead_suites", [7] = "max_subflows", [8] = "mp_idle", [9] = "cid_len",
    [10] = "tickets",
}

local f = {
    form = ProtoField.string("mpudp.form", "Header form"),
    ptype = ProtoField.uint8("mpudp.type", "Packet type", base.DEC, types, 0x38),
    signed = ProtoField.bool("mpudp.signed", "Signed (S)", 8, nil, 0x01),
    psk = ProtoField.bool("mpudp.psk", "Keyed with a ticket's PSK (P)", 8, nil, 0x02),
    resume = ProtoField.bool("mpudp.resume", "Resumption offer (R)", 8, nil, 0x01),
    version = ProtoField.uint32("mpudp.version", "Version", base.HEX),
    dcid = ProtoField.bytes("mpudp.dcid", "Destination CID"),
    scid = ProtoField.bytes("mpudp.scid", "Source CID"),
    token_len = ProtoField.uint32("mpudp.token_length", "Token length"),
    token = ProtoField.bytes("mpudp.retry_token", "Retry token"),
    key_share = ProtoField.bytes("mpudp.key_share", "X25519 key share"),
    params_len = ProtoField.uint32("mpudp.params_length", "Transport parameters length"),
    param = ProtoField.uint32("mpudp.param", "Transport parameter", base.HEX, params),
    param_value = ProtoField.uint64("mpudp.param_value", "Value"),
    padding = ProtoField.uint32("mpudp.padding", "Padding (bytes)"),
    tag = ProtoField.bytes("mpudp.integrity_tag", "Integrity tag"),
    suite = ProtoField.uint8("mpudp.suite", "AEAD suite", base.HEX, suites),
    signature = ProtoField.bytes("mpudp.signature", "Ed25519 signature"),
    psk_proof = ProtoField.bytes("mpudp.psk_proof", "PSK proof (resumed)"),
    ticket_len = ProtoField.uint32("mpudp.ticket_length", "Resumption ticket length"),
    ticket = ProtoField.bytes("mpudp.ticket", "Resumption ticket"),
    ticket_age = ProtoField.uint32("mpudp.ticket_age", "Obfuscated ticket age"),
    binder = ProtoField.bytes("mpudp.binder", "Binder"),
    pn = ProtoField.uint32("mpudp.pn", "Packet number"),
    cookie_len = ProtoField.uint32("mpudp.cookie_length", "Cookie length"),
    cookie = ProtoField.bytes("mpudp.cookie", "Cookie"),
    join_token = ProtoField.uint32("mpudp.join_token", "Receiver's token", base.HEX),
    reset_token = ProtoField.bytes("mpudp.reset_token", "Stateless reset token"),
    subflow = ProtoField.uint32("mpudp.subflow", "Subflow number", base.HEX),
    opener = ProtoField.string("mpudp.opener", "Opened by"),
    supported = ProtoField.uint32("mpudp.supported_version", "Supported version", base.HEX),
    payload = ProtoField.bytes("mpudp.payload", "Sealed payload (AEAD)"),
    protected = ProtoField.bytes("mpudp.protected", "Protected packet number and sealed payload"),
}
local fields = {}
for _, v in pairs(f) do fields[#fields + 1] = v end
p.fields = fields

local malformed = ProtoExpert.new("mpudp.malformed", "Malformed mpudp packet", expert.group.MALFORMED, expert.severity.ERROR)
p.experts = { malformed }

p.prefs.port = Pref.uint("UDP port", 0, "A server port to dissect as mpudp (0: learn it from INITIALs)")
p.prefs.cid_len = Pref.uint("Short header DCID length", 4, "The receiver's cid_len (PROTOCOL.md §2), 4 to 8")

-- cid_len announced by clients in their INITIAL, by "address:port" of the client.
local client_cid_len = {}

-- A QUIC varint at `off`: value (a number below 2^53, or a UInt64), its length; nil if cut.
local function varint(tvb, off)
    if off >= tvb:len() then return nil end
    local b = tvb(off, 1):uint()
    local len = 2 ^ math.floor(b / 64)
    if off + len > tvb:len() then return nil end
    if len == 1 then return b % 64, 1 end
    if len == 2 then return tvb(off, 2):uint() % 0x4000, 2 end
    if len == 4 then return tvb(off, 4):uint() % 0x40000000, 4 end
    -- A number (exact below 2^53): a length or a value shown; never a UInt64, which Lua
    -- cannot use as a length or a loop bound.
    local v = tvb(off, 8):uint64():band(UInt64.new(0xffffffff, 0x3fffffff))
    return v:tonumber(), 8
end

local function bad(tree, what)
    tree:add_proto_expert_info(malformed, what)
    return false
end

-- Transport parameters (§8) in [off, off + len).
local function dissect_params(tvb, tree, off, len, pinfo)
    local sub = tree:add(f.params_len, tvb(off, len), len)
    local stop = off + len
    while off < stop do
        local id, il = varint(tvb, off)
        if not id then return bad(sub, "transport parameter id cut short") end
        local l, ll = varint(tvb, off + il)
        if not l or off + il + ll + l > stop then return bad(sub, "transport parameter length runs past the parameters") end
        local item = sub:add(f.param, tvb(off, il + ll + l), id)
        if l > 0 and id ~= 6 then
            local v = varint(tvb, off + il + ll)
            if v then
                item:add(f.param_value, tvb(off + il + ll, l), UInt64.new(v))
                if id == 9 then
                    client_cid_len[tostring(pinfo.src) .. ":" .. pinfo.src_port] = v
                end
            end
        elseif id == 6 then
            for k = 0, l - 1 do item:add(f.suite, tvb(off + il + ll + k, 1)) end
        end
        off = off + il + ll + l
    end
    return true
end

local function need(tvb, tree, off, n, what)
    if off + n > tvb:len() then return bad(tree, what .. " cut short") end
    return true
end

local function dissect_long(tvb, pinfo, tree)
    local b0 = tvb(0, 1):uint()
    local t = math.floor(b0 / 8) % 8
    tree:add(f.form, tvb(0, 1), "long")
    local version = tvb(1, 4):uint()
    if version == 0 then
        pinfo.cols.info:set("VERSION_NEGOTIATION")
        tree:add(f.version, tvb(1, 4))
        if not need(tvb, tree, 5, 16, "CIDs") then return end
        tree:add(f.dcid, tvb(5, 8))
        tree:add(f.scid, tvb(13, 8))
        local off = 21
        if (tvb:len() - off) % 4 ~= 0 or tvb:len() == off then return bad(tree, "supported versions not a list of 4-byte versions") end
        while off < tvb:len() do
            tree:add(f.supported, tvb(off, 4))
            off = off + 4
        end
        return
    end
    if version ~= VERSION then
        -- Another version's packet (a client newer than its server): its fields are that
        -- version's; the server answers with VERSION_NEGOTIATION.
        tree:add(f.version, tvb(1, 4))
        pinfo.cols.info:set(string.format("long header of unknown version 0x%08x", version))
        return
    end
    tree:add(f.ptype, tvb(0, 1))
    if t == 2 then
        tree:add(f.signed, tvb(0, 1))
        tree:add(f.psk, tvb(0, 1))
    end
    if t == 0 then tree:add(f.resume, tvb(0, 1)) end
    tree:add(f.version, tvb(1, 4))
    local name = types[t] or ("reserved type " .. t)
    pinfo.cols.info:set(name)
    if not types[t] then return bad(tree, "reserved packet type") end
    local off = 5
    -- STATELESS_RESET (§3.4): the token and nothing after.
    if t == 6 then
        if tvb:len() ~= 21 then return bad(tree, "a STATELESS_RESET is 21 bytes") end
        tree:add(f.reset_token, tvb(off, 16))
        return
    end
    if t == 4 then
        if not need(tvb, tree, off, 20, "JOIN header") then return end
        tree:add(f.join_token, tvb(off, 4))
        tree:add(f.scid, tvb(off + 4, 8))
        local sf = tvb(off + 12, 4):uint()
        tree:add(f.subflow, tvb(off + 12, 4))
        tree:add(f.opener, tvb(off + 12, 1), sf >= 0x80000000 and "server" or "client")
        tree:add(f.pn, tvb(off + 16, 4))
        pinfo.cols.info:append(string.format(" token=%08x subflow=%u pn=%u", tvb(off, 4):uint(), sf % 0x80000000, tvb(off + 16, 4):uint()))
        off = off + 20
        if off >= tvb:len() then return bad(tree, "no sealed payload") end
        tree:add(f.payload, tvb(off))
        return
    end
    if not need(tvb, tree, off, 16, "CIDs") then return end
    tree:add(f.dcid, tvb(off, 8))
    tree:add(f.scid, tvb(off + 8, 8))
    pinfo.cols.info:append(" dcid=" .. tostring(tvb(off, 8):bytes()) .. " scid=" .. tostring(tvb(off + 8, 8):bytes()))
    off = off + 16
    if t == 0 or t == 1 then
        local l, ll = varint(tvb, off)
        if not l or off + ll + l > tvb:len() then return bad(tree, "token length runs past the datagram") end
        tree:add(f.token_len, tvb(off, ll), l)
        if l > 0 then tree:add(f.token, tvb(off + ll, l)) end
        off = off + ll + l
        if t == 1 then
            if tvb:len() - off ~= 16 then return bad(tree, "a RETRY ends with a 16-byte tag") end
            tree:add(f.tag, tvb(off, 16))
            return
        end
        if not need(tvb, tree, off, 32, "key share") then return end
        tree:add(f.key_share, tvb(off, 32))
        off = off + 32
        local pl, pll = varint(tvb, off)
        if not pl or off + pll + pl > tvb:len() then return bad(tree, "parameters run past the datagram") end
        -- Without a cid_len parameter the client's CIDs are 8 bytes long (§8).
        client_cid_len[tostring(pinfo.src) .. ":" .. pinfo.src_port] = 8
        if not dissect_params(tvb, tree, off + pll, pl, pinfo) then return end
        off = off + pll + pl
        -- R (byte 0, bit 0): a resumption offer follows the parameters (§4.8).
        if b0 % 2 == 1 then
            local tl, tll = varint(tvb, off)
            if not tl or tl == 0 or off + tll + tl + 36 > tvb:len() then return bad(tree, "resumption offer runs past the datagram") end
            tree:add(f.ticket_len, tvb(off, tll), tl)
            tree:add(f.ticket, tvb(off + tll, tl))
            off = off + tll + tl
            tree:add(f.ticket_age, tvb(off, 4))
            tree:add(f.binder, tvb(off + 4, 32))
            off = off + 36
            pinfo.cols.info:append(" resuming")
        end
        tree:add(f.padding, tvb(off), tvb:len() - off)
        if tvb:len() < 1200 then return bad(tree, "an INITIAL is at least 1200 bytes") end
        -- Short-header packets to and from this server are mpudp too.
        if p.prefs.port == 0 then DissectorTable.get("udp.port"):add(pinfo.dst_port, p) end
        return
    end
    if t == 2 then
        if not need(tvb, tree, off, 33, "key share and suite") then return end
        tree:add(f.key_share, tvb(off, 32))
        tree:add(f.suite, tvb(off + 32, 1))
        off = off + 33
        local signed, psk = b0 % 2 == 1, math.floor(b0 / 2) % 2 == 1
        if signed and psk then return bad(tree, "S and P both set") end
        if signed then
            if not need(tvb, tree, off, 64, "signature") then return end
            tree:add(f.signature, tvb(off, 64))
            off = off + 64
        end
        -- P (byte 0, bit 1): resumed with the INITIAL's ticket, a PSK proof follows (§4.8).
        if psk then
            if not need(tvb, tree, off, 32, "PSK proof") then return end
            tree:add(f.psk_proof, tvb(off, 32))
            off = off + 32
            pinfo.cols.info:append(" resumed")
        end
    elseif t == 3 then
        local l, ll = varint(tvb, off)
        if not l or l == 0 or off + ll + l > tvb:len() then return bad(tree, "cookie length runs past the datagram") end
        tree:add(f.cookie_len, tvb(off, ll), l)
        tree:add(f.cookie, tvb(off + ll, l))
        off = off + ll + l
    end
    if not need(tvb, tree, off, 4, "packet number") then return end
    tree:add(f.pn, tvb(off, 4))
    off = off + 4
    if off >= tvb:len() then return bad(tree, "no sealed payload") end
    tree:add(f.payload, tvb(off))
end

function p.dissector(tvb, pinfo, tree)
    local n = tvb:len()
    if n == 0 then return 0 end
    pinfo.cols.protocol:set("MPUDP")
    local t = tree:add(p, tvb())
    local b0 = tvb(0, 1):uint()
    if n == 1 and b0 == 0 then
        t:add(f.form, tvb(0, 1), "WARM")
        pinfo.cols.info:set("WARM")
    elseif b0 >= 0x80 then
        if n < 5 then bad(t, "long header cut short") else dissect_long(tvb, pinfo, t) end
    elseif b0 >= 0x40 then
        t:add(f.form, tvb(0, 1), "short")
        local len = client_cid_len[tostring(pinfo.dst) .. ":" .. pinfo.dst_port] or p.prefs.cid_len
        if n < 1 + len + 1 then
            bad(t, "short header cut short")
        else
            t:add(f.dcid, tvb(1, len))
            t:add(f.protected, tvb(1 + len))
            pinfo.cols.info:set("short dcid=" .. tostring(tvb(1, len):bytes()))
        end
    else
        bad(t, "first byte 00xxxxxx: not a packet of this protocol")
    end
    return n
end

-- Heuristic: a long header of our version, or its version negotiation.
local function heuristic(tvb, pinfo, tree)
    if tvb:len() < 21 or tvb(0, 1):uint() < 0xc0 then return false end
    local v = tvb(1, 4):uint()
    if v ~= VERSION and v ~= 0 then return false end
    p.dissector(tvb, pinfo, tree)
    return true
end

p:register_heuristic("udp", heuristic)
DissectorTable.get("udp.port"):add_for_decode_as(p)

function p.prefs_changed()
    if p.prefs.port ~= 0 then DissectorTable.get("udp.port"):add(p.prefs.port, p) end
end
