"""The report of ``tests/gpu_ptx_checks.py --report``: what a GPU kernel's machine code
says about its speed, without a GPU (no side effects on import: the checks module
replaces parts of numba-cuda, this one does not).

Per kernel: registers a thread, local memory (stack) and spills, and the static shared
memory a block, from the PTX linked for sm_90a with the linker's verbose log (cuda.core's
Linker, i.e. nvJitLink, the linker numba-cuda loads kernels with; ``ptxas -v`` where
cuda.core is absent), hence the theoretical occupancy (:func:`occupancy`); and in the
hot loop (:func:`hot_loop`) the 64-bit multiplies by the Philox constants against
32-bit wide multiplies, double-precision divisions, local loads and stores, with the
libdevice functions the kernel's code calls (exp, log, erfc...).  Where ``nvdisasm`` is
on the PATH (or named by ``NVDISASM``) the hot loop's machine instructions are counted;
where a GPU of that compute capability is there, the driver's registers, local and
shared memory of the loaded kernel are shown beside the linker's.
"""

import os
import re

#: Compute capability 9.0 (H100, H200): registers an SM (in 4 sub-partitions, allocated
#: a warp at a time in units of 256), shared memory an SM and the 1 KiB the system
#: reserves a block, resident warps and blocks an SM (CUDA's occupancy calculator).
SM_REGS, SUBPARTITIONS, REG_UNIT = 65536, 4, 256
SM_SMEM, SMEM_RESERVED, SMEM_UNIT = 228 * 1024, 1024, 128
SM_WARPS, SM_BLOCKS = 64, 32
#: The Philox4x32 multipliers (kernels.rng), as PTX writes them.
PHILOX_M = ("3528531795", "3449720151")
#: ... and as nvdisasm writes them (signed 32-bit immediates).
SASS_M = ("-0x2daee0ad", "-0x326172a9")


def occupancy(regs, smem, threads):
    """``(blocks an SM, resident warps / 64, what limits it)`` of a kernel using ``regs``
    registers a thread and ``smem`` bytes of static shared memory a block, at ``threads``
    a block, on compute capability 9.0."""
    warps = -(-threads // 32)
    per_warp = -(-max(regs, 1) * 32 // REG_UNIT) * REG_UNIT
    by = {"warps": SM_WARPS // warps, "blocks": SM_BLOCKS,
          "registers": (SM_REGS // SUBPARTITIONS // per_warp) * SUBPARTITIONS // warps,
          "shared memory": SM_SMEM // (-(-(smem + SMEM_RESERVED) // SMEM_UNIT) * SMEM_UNIT)}
    limit = min(by, key=lambda k: (by[k], k != "warps"))
    return by[limit], by[limit] * warps / SM_WARPS, limit


def _entry(ptx):
    m = re.search(r"\.entry\s+([\w$]+)\s*\(", ptx)
    return m.group(1) if m else None


def hot_loop(lines, label, branch, marker):
    """``(start, end)``: the widest span from a label to a later branch back to it that
    holds a line matching ``marker`` (a Philox multiply: the loop that draws, in numba's
    kernels the grid-stride loop with everything inside it; a loop the compiler
    unswitched into copies counts once, as its widest copy)."""
    at = {}
    spans = []
    for k, ln in enumerate(lines):
        m = re.match(label, ln)
        if m:
            at[m.group(1)] = k
            continue
        m = re.search(branch, ln)
        if m and m.group(1) in at:
            spans.append((at[m.group(1)], k))
    hits = [k for k, ln in enumerate(lines) if re.search(marker, ln)]
    best = (0, -1)
    for a, b in spans:
        if b - a > best[1] - best[0] and any(a <= k <= b for k in hits):
            best = (a, b)
    return best


def ptx_counts(ptx):
    """The instructions of interest in the entry function's hot loop."""
    entry = ptx[ptx.index(".entry"):] if ".entry" in ptx else ptx
    lines = [ln.strip() for ln in entry.splitlines()]
    a, b = hot_loop(lines, r"^(\$L__BB\d+_\d+):", r"\bbra(?:\.uni)?\s+(\$L__BB\d+_\d+);",
                    r"mul\.wide\.u32|mul\.\w+\.[su]64\s.*(" + "|".join(PHILOX_M) + ");")
    ops = [re.sub(r"^@!?%\w+\s+", "", ln) for ln in lines[a:b + 1]
           if ln and not ln.startswith(("$", "//", "{", "}", "."))]

    def n(pat):
        return sum(1 for op in ops if re.match(pat, op))

    mul64 = [op for op in ops if re.match(r"mul\.(lo|hi)\.[su]64", op)]
    return {"loop_ptx": len(ops),
            "philox_mul64": sum(1 for op in mul64 if op.rstrip(";").endswith(PHILOX_M)),
            "mul64": len(mul64),
            "mul_wide_u32": n(r"mul\.wide\.u32"), "mul_hi_u32": n(r"mul\.hi\.u32"),
            "div_f64": n(r"div\.(rn|full|approx)[\w.]*\.f64"),
            "ld_local": n(r"ld\.local"), "st_local": n(r"st\.local"),
            "calls": n(r"call")}


def libdevice_calls(llvm):
    """``{name: calls}`` of the libdevice functions the kernel's code calls."""
    from collections import Counter

    return dict(sorted(Counter(m[5:] for m in re.findall(r"call [^@\n]*@\"?(__nv_\w+)\"?\(",
                                                         llvm)).items()))


def _link_verbose(ptxs, cc, max_registers=None):
    """``(cubin bytes, info log, linker)`` of PTX linked for sm_90a with the linker's
    verbose log (cuda.core's Linker: nvJitLink, the linker numba-cuda loads kernels
    with), or ``ptxas -v`` where cuda.core is absent; ``(None, "", None)`` when neither
    is there.  (The two can allocate registers differently.)"""
    arch = f"sm_{cc[0]}{cc[1]}a"
    try:
        from cuda.core import Linker, LinkerOptions, ObjectCode

        link = Linker(*[ObjectCode.from_ptx(p.encode()) for p in ptxs],
                      options=LinkerOptions(arch=arch, verbose=True,
                                            max_register_count=max_registers or None))
        code = link.link("cubin").code
        return bytes(code), link.get_info_log(), f"{Linker.which_backend()}"
    except Exception:  # noqa: BLE001 - no cuda.core (or an older one): ptxas, if found
        pass
    import shutil
    import subprocess
    import tempfile

    ptxas = shutil.which("ptxas")
    try:
        import nvidia.cuda_nvcc as _nvcc  # the ptxas of the nvidia-cuda-nvcc wheel

        cand = os.path.join(list(_nvcc.__path__)[0], "bin", "ptxas")
        ptxas = ptxas or (cand if os.path.exists(cand) else None)
    except ImportError:
        pass
    if not ptxas or len(ptxs) != 1:
        return None, "", None
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptxs[0])
        cap = [f"--maxrregcount={max_registers}"] if max_registers else []
        res = subprocess.run([ptxas, "-v", f"-arch={arch}", *cap, "-o", out, src],
                             capture_output=True, text=True)
        if res.returncode:
            return None, res.stderr, None
        with open(out, "rb") as f:
            return f.read(), res.stderr, "ptxas"


def link_resources(log, entry):
    """Registers, local memory (the entry's stack with its callees'), spill stores and
    loads (bytes a thread) of ``entry`` in a ptxas or nvJitLink verbose log."""
    out = {"regs": None, "local": None, "spill_st": None, "spill_ld": None}
    if not log or not entry:
        return out
    k = log.find(f"Compiling entry function '{entry}'")
    blk = log[k:] if k >= 0 else log
    m = re.search(r"[Uu]sed (\d+) registers", blk)
    out["regs"] = int(m.group(1)) if m else None
    m = re.search(rf"Function properties for '?{re.escape(entry)}'?\s*\n[^\n]*?(\d+) bytes "
                  r"stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", log)
    if m:
        out["local"], out["spill_st"], out["spill_ld"] = (int(g) for g in m.groups())
    m = re.search(r"(\d+) bytes cumulative stack size", blk) or re.search(
        r"used \d+ registers[^\n]*?, (\d+) stack", blk)
    if m:
        out["local"] = max(out["local"] or 0, int(m.group(1)))
    return out


def static_shared(ptx):
    """Bytes of the entry's static shared arrays (the PTX's ``.shared`` declarations)."""
    return sum(int(m) for m in re.findall(r"\.shared\s+\.align\s+\d+\s+\.b8\s+[\w$]+\[(\d+)\]",
                                          ptx))


def sass_counts(cubin):
    """The hot loop's machine instructions, where ``nvdisasm`` can be run (else {})."""
    import shutil
    import subprocess
    import tempfile
    from collections import Counter

    nvd = os.environ.get("NVDISASM") or shutil.which("nvdisasm")
    if not nvd or not cubin:
        return {}
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        res = subprocess.run([nvd, "-c", f.name], capture_output=True, text=True)
    if res.returncode:
        return {}
    lines = res.stdout.splitlines()
    a, b = hot_loop(lines, r"^\s*(\.L_x_\d+):", r"BRA\s+`\((\.L_x_\d+)\)",
                    r"IMAD\.WIDE\.U32 .*(" + "|".join(SASS_M) + ")")
    ops = Counter()
    for ln in lines[a:b + 1]:
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9.]*)", ln)
        if m:
            ops[m.group(1)] += 1
    return {"loop_sass": sum(ops.values()),
            "imad_wide": sum(v for k, v in ops.items() if k.startswith("IMAD.WIDE")),
            "iadd": sum(v for k, v in ops.items() if k.startswith(("IADD", "VIADD"))),
            "ldl_stl": sum(v for k, v in ops.items() if k.startswith(("LDL", "STL"))),
            "mufu": sum(v for k, v in ops.items() if k.startswith("MUFU"))}


def driver_attributes(lib, cc):
    """Registers, local memory and static shared memory a thread/block as the CUDA driver
    reports them for the kernel loaded on this machine's GPU (what numba-cuda's
    ``get_regs_per_thread`` and its kin read), where a GPU of compute capability ``cc``
    is there; else {}."""
    try:
        from numba import cuda

        if lib is None or not cuda.is_available():
            return {}
        if tuple(cuda.get_current_device().compute_capability) != tuple(cc[:2]):
            return {}
        attrs = lib.get_cufunc().attrs
        return {"drv_regs": int(attrs.regs), "drv_local": int(attrs.local),
                "drv_smem": int(attrs.shared)}
    except Exception:  # noqa: BLE001 - no driver, no device, a load refused: no figures
        return {}


def report_rows(ptx_of, lib_of, threads, cc):
    """One record a compiled kernel (``ptx_of``: name -> PTX; ``lib_of``: name ->
    numba-cuda's code library): resources, occupancy and the hot loop's counts."""
    rows = []
    for key in sorted(ptx_of):
        ptx, lib = ptx_of[key], lib_of.get(key)
        ptxs = lib.get_asm_strs(cc=(*cc, "a")) if lib is not None else [ptx]
        cap = getattr(lib, "_max_registers", None)  # the launcher's cap, as numba links it
        cubin, log, linker = _link_verbose(ptxs, cc, cap)
        row = {"kernel": key, "cc": f"{cc[0]}.{cc[1]}", "threads": threads, "max_regs": cap,
               "linker": linker,
               **link_resources(log, _entry(ptx)), "smem": static_shared(ptx)}
        if row["regs"] is not None:
            row["blocks_sm"], row["occupancy"], row["limit"] = occupancy(row["regs"],
                                                                         row["smem"], threads)
        row.update(ptx_counts(ptx))
        row["libdevice"] = libdevice_calls(lib.get_llvm_str()) if lib is not None else {}
        row.update(sass_counts(cubin))
        row.update(driver_attributes(lib, cc))
        rows.append(row)
    return rows


def render(rows):
    """The report's Markdown table."""
    def v(r, k):
        return "-" if r.get(k) is None else str(r[k])

    sass = any("loop_sass" in r for r in rows)
    head = ["kernel", "regs", "local B (spill st/ld)", "smem B", "blocks/SM",
            "occupancy (limit)", "loop PTX", "Philox mul.*.u64", "mul.wide.u32",
            "mul.hi.u32", "div.f64", "ld/st.local", "libdevice"]
    drv = any("drv_regs" in r for r in rows)
    if sass:
        head += ["loop SASS", "IMAD.WIDE", "IADD", "LDL/STL"]
    if drv:
        head += ["driver: regs / local B / smem B"]
    r0 = rows[0] if rows else {}
    out = [f"Compiled for compute capability {r0.get('cc', '9.0')} (sm_90a), linked by "
           f"{r0.get('linker') or 'nothing (no linker found)'}; {r0.get('threads', '')} "
           "threads a block; not timings.", "", "| " + " | ".join(head) + " |",
           "|" + "|".join(["---"] + ["---:"] * (len(head) - 2) + ["---"]) + "|"]
    for r in rows:
        occ = ("-" if r.get("occupancy") is None
               else f"{100 * r['occupancy']:.1f}% ({r['limit']})")
        lib = ", ".join(f"{k} {n}" for k, n in r["libdevice"].items()) or "-"
        regs = v(r, "regs") + (f" (cap {r['max_regs']})" if r.get("max_regs") else "")
        cells = [r["kernel"], regs,
                 f"{v(r, 'local')} ({v(r, 'spill_st')}/{v(r, 'spill_ld')})", v(r, "smem"),
                 v(r, "blocks_sm"), occ, v(r, "loop_ptx"), v(r, "philox_mul64"),
                 v(r, "mul_wide_u32"), v(r, "mul_hi_u32"), v(r, "div_f64"),
                 f"{v(r, 'ld_local')}/{v(r, 'st_local')}", lib]
        if sass:
            cells += [v(r, "loop_sass"), v(r, "imad_wide"), v(r, "iadd"), v(r, "ldl_stl")]
        if drv:
            cells += [f"{v(r, 'drv_regs')} / {v(r, 'drv_local')} / {v(r, 'drv_smem')}"]
        out.append("| " + " | ".join(cells) + " |")
    return out
