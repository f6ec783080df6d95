import json,sys
d=json.load(open(sys.argv[1]))
def gib(b): return "-" if b is None else f"{b/2**20:.1f} MiB"
print(f"| scenario | allocator | outcome | OOM live (min/median/max of {d['cells'][0]['spread']['runs']}) | OOM event (median) |")
print("|---|---|---|---|---|")
for c in d['cells']:
    s=c.get('spread') or {}
    lb=s.get('oom_live_bytes') or {}
    ev=s.get('oom_event') or {}
    live = f"{gib(lb.get('min'))} / {gib(lb.get('median'))} / {gib(lb.get('max'))}" if lb else "-"
    print(f"| {c['scenario']} | {c['allocator']} | {c['outcome']} | {live} | {ev.get('median','-')} |")
