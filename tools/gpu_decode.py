#!/usr/bin/env python3
"""The decode step of bench/bench_decode.c in torch and jax, same job.

Same model and shapes as bench_decode (random weights, bfloat16, batch 1,
d_model 2048, 16 layers, 16/4 heads of dim 128, SwiGLU 5632, vocab 32000,
KV cache of capacity 1024 attended under a mask of positions <= pos), each
step ending with the token read on the host as a sampling loop does:
  torch eager, torch.compile(mode="reduce-overhead") (CUDA graphs; static
  caches updated in place with index_copy_, the recipe torch recommends),
  jax.jit (caches donated, so updates are in place).
Usage: gpu_decode.py [bench_decode binary]; runs it first when given and
prints its lines, then the others' "decode-case" lines and a table.
"""
import os, subprocess, sys, time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
VOCAB, DIM, LAYERS, HEADS, KV, HD, FFN, CACHE, START = 32000, 2048, 16, 16, 4, 128, 5632, 1024, 960
STEPS, WARM = int(os.environ.get("LACE_DECODE_STEPS", "64")), 8
START = min(START, CACHE - STEPS - WARM)  # as bench_decode: every position fits the cache


def line(name, dt):
    ms = 1e3 * dt / STEPS
    print(f"decode-case {name} layers={LAYERS} dim={DIM} ms_per_token={ms:.3f} tok_s={STEPS / dt:.1f}",
          flush=True)
    return ms


def torch_runs():
    import torch
    import torch.nn.functional as F
    dev, dt = "cuda", torch.bfloat16
    g = torch.Generator(device=dev).manual_seed(0)
    def rnd(*s, amp):
        return (torch.randn(*s, generator=g, device=dev, dtype=torch.float32) * amp).to(dt)
    E = rnd(VOCAB, DIM, amp=0.02)
    fin = 1 + rnd(DIM, amp=0.1)
    ai, af = DIM ** -0.5, FFN ** -0.5
    L = [dict(n1=1 + rnd(DIM, amp=0.1), wq=rnd(DIM, DIM, amp=ai), wk=rnd(DIM, KV * HD, amp=ai),
              wv=rnd(DIM, KV * HD, amp=ai), wo=rnd(DIM, DIM, amp=ai), n2=1 + rnd(DIM, amp=0.1),
              w1=rnd(DIM, FFN, amp=ai), w3=rnd(DIM, FFN, amp=ai), w2=rnd(FFN, DIM, amp=af))
         for _ in range(LAYERS)]
    inv = 1.0 / (10000.0 ** (torch.arange(0, HD, 2, device=dev, dtype=torch.float32) / HD))
    ar = torch.arange(CACHE, device=dev)

    def norm(x, w):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).to(dt) * w

    def rope(x, pos):  # x (1, h, 1, HD), non-traditional (halves rotated)
        ang = pos.float() * inv
        c, s = torch.cos(ang), torch.sin(ang)
        x1, x2 = x[..., : HD // 2].float(), x[..., HD // 2:].float()
        return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], -1).to(dt)

    def step(token, pos, kcs, vcs):
        x = E[token].view(1, 1, DIM)
        mask = (ar <= pos).view(1, 1, 1, CACHE)
        for l, w in enumerate(L):
            h = norm(x, w["n1"])
            q = rope((h @ w["wq"]).view(1, 1, HEADS, HD).transpose(1, 2), pos)
            k = rope((h @ w["wk"]).view(1, 1, KV, HD).transpose(1, 2), pos)
            v = (h @ w["wv"]).view(1, 1, KV, HD).transpose(1, 2)
            kcs[l].index_copy_(2, pos.view(1), k)
            vcs[l].index_copy_(2, pos.view(1), v)
            kk = kcs[l].repeat_interleave(HEADS // KV, 1)
            vv = vcs[l].repeat_interleave(HEADS // KV, 1)
            o = F.scaled_dot_product_attention(q, kk, vv, attn_mask=mask)
            x = x + o.transpose(1, 2).reshape(1, 1, DIM) @ w["wo"]
            h = norm(x, w["n2"])
            x = x + (F.silu(h @ w["w1"]) * (h @ w["w3"])) @ w["w2"]
        logits = norm(x, fin).view(1, DIM) @ E.t()
        return torch.argmax(logits, -1).int(), pos + 1

    def run(f, name, mark=False):
        kcs = [torch.zeros(1, KV, CACHE, HD, device=dev, dtype=dt) for _ in range(LAYERS)]
        vcs = [torch.zeros(1, KV, CACHE, HD, device=dev, dtype=dt) for _ in range(LAYERS)]
        if mark:
            for t in kcs + vcs:
                torch._dynamo.mark_static_address(t)
        tok = torch.zeros(1, dtype=torch.int64, device=dev)
        pos = torch.tensor(START, device=dev)
        toks = []
        with torch.no_grad():
            for s in range(WARM + STEPS):
                if s == WARM:
                    t0 = time.perf_counter()
                if mark:
                    torch.compiler.cudagraph_mark_step_begin()
                t, p = f(tok, pos, kcs, vcs)
                toks.append(int(t.item()))
                tok, pos = t.long().clone(), p.clone()
        line(name, time.perf_counter() - t0)
        return toks

    res = {}
    res["torch-eager"] = run(step, "torch-eager")
    try:
        cf = torch.compile(step, mode="reduce-overhead", fullgraph=True)
        res["torch-compile"] = run(cf, "torch.compile-reduce-overhead", mark=True)
    except Exception as e:  # report, do not hide
        print(f"decode-case torch.compile-reduce-overhead failed: {type(e).__name__}: {e}"[:400])
    return res


def jax_runs():
    import jax, jax.numpy as jnp
    dt = jnp.bfloat16
    key = jax.random.PRNGKey(0)
    keys = iter(jax.random.split(key, 16 * LAYERS + 8))
    def rnd(*s, amp):
        return (jax.random.normal(next(keys), s, jnp.float32) * amp).astype(dt)
    ai, af = DIM ** -0.5, FFN ** -0.5
    E, fin = rnd(VOCAB, DIM, amp=0.02), 1 + rnd(DIM, amp=0.1)
    L = [dict(n1=1 + rnd(DIM, amp=0.1), wq=rnd(DIM, DIM, amp=ai), wk=rnd(DIM, KV * HD, amp=ai),
              wv=rnd(DIM, KV * HD, amp=ai), wo=rnd(DIM, DIM, amp=ai), n2=1 + rnd(DIM, amp=0.1),
              w1=rnd(DIM, FFN, amp=ai), w3=rnd(DIM, FFN, amp=ai), w2=rnd(FFN, DIM, amp=af))
         for _ in range(LAYERS)]
    inv = 1.0 / (10000.0 ** (jnp.arange(0, HD, 2, dtype=jnp.float32) / HD))

    def norm(x, w):
        xf = x.astype(jnp.float32)
        return (xf * jax.lax.rsqrt(jnp.mean(xf * xf, -1, keepdims=True) + 1e-5)).astype(dt) * w

    def rope(x, pos):
        ang = pos.astype(jnp.float32) * inv
        c, s = jnp.cos(ang), jnp.sin(ang)
        x1, x2 = x[..., : HD // 2].astype(jnp.float32), x[..., HD // 2:].astype(jnp.float32)
        return jnp.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], -1).astype(dt)

    def step(token, pos, kcs, vcs, E, fin, L):
        x = E[token].reshape(1, 1, DIM)
        mask = (jnp.arange(CACHE) <= pos)
        nk, nv = [], []
        for l, w in enumerate(L):
            h = norm(x, w["n1"])
            q = rope((h @ w["wq"]).reshape(1, HEADS, HD), pos)  # (1, H, HD)
            k = rope((h @ w["wk"]).reshape(1, KV, HD), pos)
            v = (h @ w["wv"]).reshape(1, KV, HD)
            kc = jax.lax.dynamic_update_slice(kcs[l], k[:, :, None, :], (0, 0, pos, 0))
            vc = jax.lax.dynamic_update_slice(vcs[l], v[:, :, None, :], (0, 0, pos, 0))
            qg = q.reshape(KV, HEADS // KV, HD).astype(jnp.float32)
            sc = jnp.einsum("kgd,ktd->kgt", qg, kc[0].astype(jnp.float32)) * HD ** -0.5
            sc = jnp.where(mask, sc, -jnp.inf)
            p = jax.nn.softmax(sc, -1)
            o = jnp.einsum("kgt,ktd->kgd", p, vc[0].astype(jnp.float32)).astype(dt)
            x = x + o.reshape(1, 1, DIM) @ w["wo"]
            h = norm(x, w["n2"])
            x = x + (jax.nn.silu(h @ w["w1"]) * (h @ w["w3"])) @ w["w2"]
            nk.append(kc)
            nv.append(vc)
        logits = norm(x, fin).reshape(1, DIM) @ E.T
        return jnp.argmax(logits, -1).astype(jnp.int32), pos + 1, nk, nv

    f = jax.jit(step, donate_argnums=(2, 3))
    kcs = [jnp.zeros((1, KV, CACHE, HD), dt) for _ in range(LAYERS)]
    vcs = [jnp.zeros((1, KV, CACHE, HD), dt) for _ in range(LAYERS)]
    tok, pos = jnp.zeros((1,), jnp.int32), jnp.int32(START)
    toks = []
    for s in range(WARM + STEPS):
        if s == WARM:
            t0 = time.perf_counter()
        tok, pos, kcs, vcs = f(tok, pos, kcs, vcs, E, fin, L)
        toks.append(int(tok[0]))
    line("jax.jit", time.perf_counter() - t0)
    return toks


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("--torch", "--jax"):
        fn = torch_runs if sys.argv[1] == "--torch" else jax_runs
        try:
            fn()
        except Exception as e:
            print(f"{fn.__name__} failed: {type(e).__name__}: {e}"[:400])
        return
    if len(sys.argv) > 1:
        r = subprocess.run([sys.argv[1]], capture_output=True, text=True)
        sys.stdout.write(r.stdout + r.stderr)
    for which in ("--torch", "--jax"):  # one process each: their allocators stay apart
        r = subprocess.run([sys.executable, __file__, which], capture_output=True, text=True)
        lines = [l for l in (r.stdout + r.stderr).splitlines() if "decode-case" in l or "failed" in l]
        print("\n".join(lines) if lines else f"{which[2:]}: no result (exit {r.returncode}): "
              + (r.stdout + r.stderr)[-600:], flush=True)


if __name__ == "__main__":
    main()
