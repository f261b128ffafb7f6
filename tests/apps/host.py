# host.py ASSEMBLY MS [fail]: Python hosting CoreCLR through pythonnet, a host that exits without
# shutting the runtime down. Loads ASSEMBLY, runs Acme.Hosted.Work(MS), prints its result, and
# with `fail` then exits with status 3 (an error after .NET code ran).
import os
import sys

from pythonnet import load

# clr_loader finds the runtime through DOTNET_ROOT: the directory of the `dotnet` host.
os.environ["DOTNET_ROOT"] = os.path.dirname(os.path.realpath(os.environ["SONDE_DOTNET"]))
load("coreclr")
import clr  # noqa: E402  (only after load)

clr.AddReference(sys.argv[1])
from Acme import Hosted  # noqa: E402

print("result", Hosted.Work(int(sys.argv[2])), flush=True)
if len(sys.argv) > 3 and sys.argv[3] == "fail":
    raise SystemExit(3)
