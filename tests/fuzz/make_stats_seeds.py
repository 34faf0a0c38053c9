#!/usr/bin/env python3
"""The stats segment reader's fuzz seeds (corpus-stats/), made anew when the
segment's layout changes: beginnings of segments this build's writer makes
(header, description, dictionaries, rows: where the reader's checks are).

  make_stats_seeds.py BUILD_DIR

  a real writer's segment of two thread slots and a few label sets;
  the same with every row of every map claimed; with 65,537 slots claimed;
  with every slot of the three claimed; and a segment of another billing.d
  (one more probe and one more bucket, statstest.variant_provider), as
  statstest.write_segment lays it out.  Each is named by its SHA-1, as
  libFuzzer names corpus files."""
import hashlib
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "stats"))
os.environ.setdefault("BS_WORKLOAD", "")
import statstest as st  # noqa: E402

build = os.path.abspath(sys.argv[1])
corpus = os.path.join(HERE, "corpus-stats")
ROW_COUNT = struct.calcsize("<8sIIQQIIQIIIIQQQQQQQII")
seeds = []
with tempfile.TemporaryDirectory() as tmp:
    env = dict(os.environ, BILLING_STATS_DIR=tmp, BILLING_STATS_THREADS="2")
    p = subprocess.run([os.path.join(build, "tests", "stats", "stats_workload"), "threads", "2", "200"],
                       capture_output=True, text=True, env=env, check=True)
    path = st.segments(p.stdout)[0][1]
    data = open(path, "rb").read()
    h = st.header(data)
    begin = bytearray(data[:h["slots_offset"]])
    seeds.append(bytes(begin))
    every_row = bytearray(begin)
    for m in range(h["nmaps"]):
        struct.pack_into("<I", every_row, ROW_COUNT + 4 * m, h["rows_per_map"])
    seeds.append(bytes(every_row))
    for slots in (65537, h["nslots"]):
        claimed = bytearray(begin)
        struct.pack_into("<II", claimed, struct.calcsize("<8sIIQQIIQI"), slots, h["rows_per_map"])
        struct.pack_into("<I", claimed, struct.calcsize("<8sIIQQIIQIIIIQQQQQQQ"), slots)
        seeds.append(bytes(claimed))
    other = os.path.join(tmp, "other.stats")
    ms = st.billing_d.parse(st.variant_provider(tmp)).metrics
    st.write_segment(other, ms, st.sample_rows(ms, 7))
    data = open(other, "rb").read()
    seeds.append(data[:st.header(data)["slots_offset"]])
for old in os.listdir(corpus):
    os.unlink(os.path.join(corpus, old))
for s in seeds:
    with open(os.path.join(corpus, hashlib.sha1(s).hexdigest()), "wb") as f:
        f.write(s)
print(f"{len(seeds)} seeds in {corpus}")
