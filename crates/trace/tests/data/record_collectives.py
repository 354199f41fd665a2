"""Records this folder's traces: every collective kind once, on the default
group and a second group ("tp"), torch.profiler and the flight recorder.
Run in an empty folder holding out/, under torchrun:
    torchrun --nproc-per-node 2 record_collectives.py
Rank 0's files are kept here."""
import os, json, torch, torch.distributed as dist
os.environ.setdefault("TORCH_FR_BUFFER_SIZE", "2000")
dist.init_process_group("gloo")
r = dist.get_rank()
sub = dist.new_group([0, 1], group_desc="tp")
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    x = torch.ones(1000)
    dist.all_reduce(x)
    out = torch.empty(2000); dist.all_gather_into_tensor(out, x)
    dist.broadcast(x, 0, group=sub)
    s=[300,700] if r==0 else [700,300]; dist.all_to_all_single(torch.empty(1000), x, s, s)
    xs=[torch.empty(1000) for _ in range(2)]; dist.all_gather(xs, x)
    dist.barrier()
prof.export_chrome_trace(f"k{r}.json")
d = json.load(open(f"k{r}.json")); d["traceName"] = "collectives_rank%d.json" % r
keep = lambda e: e.get("ph") == "M" or e.get("name","").startswith(("c10d::","gloo:"))
d["traceEvents"] = [e for e in d["traceEvents"] if keep(e)]
json.dump(d, open(f"out/kineto_collectives_rank{r}.json","w"))
c = torch._C._distributed_c10d
open(f"out/flight_collectives_rank{r}.pkl","wb").write(c._dump_fr_trace(includeStackTraces=False))
open(f"out/flight_collectives_rank{r}.json","wb").write(c._dump_fr_trace_json())
dist.destroy_process_group()
