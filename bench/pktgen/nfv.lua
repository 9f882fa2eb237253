-- nfv.lua: RFC 2544 throughput of linerate's nfv (CheckIPHeader) on a mix of valid and bad
-- IPv4 headers, replayed by Pktgen-DPDK from bench/pktgen/pcap/nfv-mix-64.pcap:
--   pktgen -l 0-2 -n 4 -a <pci> -- -P -m "[1:2].0" -s 0:bench/pktgen/pcap/nfv-mix-64.pcap \
--          -f bench/pktgen/nfv.lua
-- nfv sends back the valid frames only (MACs swapped) and drops the bad ones, so a trial's
-- loss is 1 - back / (sent x VALID_SHARE): VALID_SHARE is the pcap's share of valid frames
-- (pcap/MANIFEST, "normal"). Pktgen cycles through the whole pcap, so over a trial the share
-- sent is the pcap's (to within one pass of it, ~1000 frames). The committed pcap is addressed
-- to 02:00:00:00:00:02 from 02:00:00:00:00:01: run nfv with --promisc and Pktgen with -P, or
-- regenerate it with your MACs (DST_MAC=... SRC_MAC=... bench/pktgen/make-pcaps).
-- With SINGLE = true no pcap is used: Pktgen's own valid UDP frames, every one must return.

-- Settings ------------------------------------------------------------------------------------
local PORT        = 0
local VALID_SHARE = 891 / 1000      -- nfv-mix-64.pcap: 891 normal of 1000 (pcap/MANIFEST)
local SINGLE      = false           -- true: valid frames of SIZES from Pktgen, no pcap
local SIZES       = { 64, 128, 256, 512, 1024, 1280, 1518 }
local DUT_MAC     = nil             -- single mode: nfv's port MAC, nil keeps Pktgen's
------------------------------------------------------------------------------------------------

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local sweep = dofile(here .. "sweep.lua")

local p = tostring(PORT)
if SINGLE then sweep.single_udp_flow(p, DUT_MAC) end

sweep.run({
    app = "nfv",
    tx_port = PORT, rx_port = PORT,
    pcap = not SINGLE,
    sizes = SIZES,
    return_share = SINGLE and 1.0 or VALID_SHARE,
    trial_ms = 10000,
    confirm_ms = 0,
})
