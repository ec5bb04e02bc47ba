# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python (pytorch-resource-accounting)
#     language: python
#     name: pytorch-resource-accounting
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # 06 · Data loading: tokens on disk, batches on the GPU
#
# The core path is the lecture for §6 and §6.1 (about 14 minutes to read); each section
# ends in "Going deeper" sections. `✓` marks a checked claim, `[measured]` a
# value that depends on the machine.

# %%
from lecture_utils import setup; device = setup()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §6 Data loading: do not read it all into memory
#
# The training data is one long sequence of token ids (Lecture 1's tokenizer): trillions,
# terabytes on disk. The notes store them as **uint16** and **memory-map** the file with
# `np.memmap`: the OS reads only the pages touched. GPT-2's 50,257 ids fit uint16's 65,536
# values: 2 bytes an id, 4× less than int64. `load_tokens` maps the course's token files:

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Say: 2 bytes per token on disk, 8 per token in a batch; only the batch is widened.
# - Ask the room, before the sampler: how many valid window starts have `n` tokens?

# %% slideshow={"slide_type": "-"} tags=["claim-S28"]
import numpy as np
import torch

from lecture_utils import check, cuda_only, measured
from lecture_utils.data import data_dir, load_tokens

# each is np.memmap(path, dtype=np.uint16, mode="r"), checked against the file's sidecar
train, val = (load_tokens(data_dir() / "tokens" / f"{split}.bin") for split in ("train", "val"))
print(f"train: a {type(train).__name__} of {len(train):,} {train.dtype} ids, {train.nbytes:,} bytes")
check("GPT-2's 50,257 ids fit uint16's 65,536 values", 50_257 <= np.iinfo(np.uint16).max + 1, True)
check("train as int64 / as uint16 (bytes)", np.asarray(train).astype(np.int64).nbytes / train.nbytes, 4.0)

# %% [markdown] slideshow={"slide_type": "slide"}
# > **The notes say** `data = np.memmap("tokens.npy", dtype=np.uint16, mode="r")` (§6), which
# > works on `lecture_02.py`'s file: raw bytes (`tofile`) under a `.npy` name. **In fact** the
# > extension is the trap: a real `.npy` (`np.save`) starts with a header (NumPy's "NPY
# > format"), and `np.memmap` maps "a *binary* file" (its docstring) unparsed: the header
# > becomes the first "tokens". Name raw files `.bin`, or open a `.npy` with `np.load(path, mmap_mode="r")`:

# %% tags=["claim-S28"]
import tempfile
from pathlib import Path

with tempfile.TemporaryDirectory() as folder:
    npy = Path(folder) / "tokens.npy"
    np.save(npy, np.array(val[:1000]))  # 1,000 real tokens
    check("np.memmap on the .npy: extra 'tokens' from its header", len(np.memmap(npy, dtype=np.uint16, mode="r")) - 1000, 64)
    check("np.load(mmap_mode='r') maps the 1,000 tokens", np.array_equal(np.load(npy, mmap_mode="r"), val[:1000]), True)

# %% [markdown] slideshow={"slide_type": "slide"}
# ### A batch: random windows, and `y` is `x` shifted by one
#
# A batch is `batch_size` windows at random starts; the targets `y` are the inputs `x`
# shifted by one token. A window of `seq_len` inputs needs `seq_len + 1` tokens, so the valid
# starts are `0 .. len - seq_len - 1`. The simplest correct sampler draws the starts,
# gathers the windows with one index, and widens them to int64 (the loss's target dtype):

# %%
# @save lecture_utils/data.py
def get_batch_simple(data, batch_size, seq_len, device, generator=None):
    """(x, y): int64 (batch_size, seq_len) windows of `data` at random starts; y is x shifted by one."""
    starts = torch.randint(len(data) - seq_len, (batch_size,), generator=generator)  # 0 .. len - seq_len - 1
    index = starts.numpy()[:, None] + np.arange(seq_len)  # (batch_size, seq_len) positions
    x = torch.from_numpy(data[index].astype(np.int64))
    y = torch.from_numpy(data[index + 1].astype(np.int64))  # one token further on
    return x.to(device), y.to(device)

# %% slideshow={"slide_type": "slide"} tags=["claim-S29"]
x, y = get_batch_simple(val, 4, 8, device, generator=torch.Generator().manual_seed(0))
print("x[0]:", x[0].tolist())
print("y[0]:", y[0].tolist())
check("x and y: int64, (batch_size, seq_len)", (x.dtype, y.dtype, tuple(y.shape)), (torch.int64, torch.int64, (4, 8)))
check("y is x shifted by one token", torch.equal(x[:, 1:], y[:, :-1]), True)

# %% [markdown] slideshow={"slide_type": "slide"}
# > **The notes say** `starts = torch.randint(len(data) - seq_len - 1, (batch_size,))` (§6).
# > **In fact** `torch.randint(high, ...)` draws from 0 to `high - 1` (its docs: `high` is
# > "one above the highest integer to be drawn"), so the last valid window is never drawn,
# > and with one valid window (`len == seq_len + 1`) the call fails. On a toy dataset whose
# > token `i` sits at position `i` (a window's first token *is* its start):

# %% tags=["claim-S29"]
toy = np.arange(10, dtype=np.uint16)  # 10 tokens, seq_len 4: the valid starts are 0 .. 5
notes_starts = torch.randint(len(toy) - 4 - 1, (1000,))  # the notes' range, 1,000 draws
x_simple, _ = get_batch_simple(toy, 1000, 4, "cpu")
check("starts the notes' randint draws", sorted(set(notes_starts.tolist())), [0, 1, 2, 3, 4])
check("starts get_batch_simple draws", sorted(set(x_simple[:, 0].tolist())), [0, 1, 2, 3, 4, 5])
err = check("the notes' randint with one valid window (5 tokens)", lambda: torch.randint(5 - 4 - 1, (1,)), raises=RuntimeError)

# %% [markdown] slideshow={"slide_type": "slide"}
# **Predict, then measure: can the sampler keep up?** E3.1's run (GPT-2 small, 8 H100s)
# consumes 2.0M tokens/s. A call gathers, widens and moves a batch; its fixed cost weighs
# most on small batches. Timed on one thread (a loader's) from a 0.9 MB file in the page
# cache: the gather alone; from a disk, random reads set the limit.

# %% tags=["claim-S29"]
import matplotlib.pyplot as plt

from lecture_utils.bench import conditions, time_fn

BATCHES = [1, 4, 16, 64, 256]  # sequences of 1,024 tokens
timings = {b: time_fn(get_batch_simple, train, b, 1024, device, threads=1, min_run_time=0.05) for b in BATCHES}
tokens_per_s = {b: b * 1024 / t.median for b, t in timings.items()}
measured("get_batch_simple, a batch of 64 x 1024", tokens_per_s[64] / 1e6, "M tokens/s", spread=timings[64])
if conditions(*timings.values()):
    assert tokens_per_s[64] > 2e6, tokens_per_s  # one sampler call out-paces 8 GPUs

# %% caption="Tokens per second of get_batch_simple against batch size, measured here, against the 2.0M tokens/s an 8-H100 run consumes." slideshow={"slide_type": "slide"}
fig, ax = plt.subplots(figsize=(10, 3.0), layout="constrained")
ax.plot(BATCHES, [t / 1e6 for t in tokens_per_s.values()], "o-", lw=2.5, label="get_batch_simple, measured here")
ax.axhline(2.0, color="0.3", ls="--", label="what 8 H100s consume (E3.1): 2.0M tokens/s")
ax.set(xscale="log", yscale="log", ylim=(1, None), xlabel="batch size (sequences of 1,024 tokens)", ylabel="M tokens/s")
ax.legend(frameon=False, fontsize=12, loc="lower right")
plt.show()

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: the course's token files, and the tokenizer that made them
#
# The course ships a small corpus, *The Jargon File* and *The Devil's Dictionary*
# (`data/README.md`), tokenized with a byte-level BPE of 8,192 ids. Each split is a raw
# file of little-endian uint16 ids (`.bin`) with a JSON **sidecar** recording the dtype,
# vocabulary size, token count and sha256: a raw file has no header, so the sidecar is the
# only record of what the bytes mean. `data_dir()` finds the files: `$LECTURE_DATA` if set,
# else the copy installed with the package, else the checkout's `data/`.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
import gc
import json
import math
import threading

import matplotlib.pyplot as plt
import torch.nn.functional as F

from lecture_utils.device import as_device
from lecture_utils.bench import time_fn
from lecture_utils.data import EOT, Prefetcher, write_tokens
from lecture_utils.sizes import format_bytes
from lecture_utils.models import GPT, get_config

ON_GPU = device.type == "cuda"
scratch = tempfile.TemporaryDirectory()  # every file the deeper sections write; removed at the end
TMP = Path(scratch.name)
TOKENS = data_dir() / "tokens"
meta = {split: json.loads((TOKENS / f"{split}.json").read_text()) for split in ("train", "val")}

print(f"{'split':<6} {'tokens':>8} {'dtype':>6} {'bytes':>8} {'vocab':>6} {'documents':>10}")
for split, data in (("train", train), ("val", val)):
    m = meta[split]
    print(f"{split:<6} {len(data):>8,} {str(data.dtype):>6} {data.nbytes:>8,} {m['vocab_size']:>6,} "
          f"{m['documents']:>10,}")
check("largest id in either split < vocabulary", int(max(train.max(), val.max())) < meta["train"]["vocab_size"],
      True)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# The ids mean nothing without the tokenizer that made them. We load it, check it against
# the sidecar, and decode the first 30 tokens of the validation split (the header of the
# dictionary file the corpus starts with), then one whole document at position 527, an
# entry of *The Devil's Dictionary*, token by token (each `|` is a token boundary). It ends
# with `<|endoftext|>`, the separator between documents:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from tokenizers import Tokenizer  # Hugging Face's, the library that trained it

tokenizer = Tokenizer.from_file(str(data_dir() / "tokenizer.json"))
eot_id = tokenizer.token_to_id(EOT)
check("tokenizer vocabulary == sidecar", tokenizer.get_vocab_size(), meta["train"]["vocab_size"])
check(f"{EOT} id", eot_id, 0)
check(f"one {EOT} per document (train, val)",
      (int((train == eot_id).sum()), int((val == eot_id).sum())),
      (meta["train"]["documents"], meta["val"]["documents"]))

first_ids = val[:30].tolist()
print(first_ids)
print(repr(tokenizer.decode(first_ids)))

START, STOP = 527, 548
doc = val[START:STOP].tolist()
print(f"{len(doc)} tokens:")
print("|".join(tokenizer.decode([i], skip_special_tokens=False) for i in doc))
check("the document ends with <|endoftext|>", doc[-1], eot_id)
check("decode then encode gives the same ids back",
      tokenizer.encode(tokenizer.decode(doc[:-1])).ids, doc[:-1])

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# How much text does a token carry? Bytes of text per token turn a token count into a
# corpus size (a larger vocabulary, trained on more text, packs more into a token):

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
text = tokenizer.decode(val.tolist())
text_bytes = len(text.encode("utf-8"))
text_tokens = len(val) - meta["val"]["documents"]  # every id but the separators
print(f"val: {text_bytes:,} bytes of text in {text_tokens:,} tokens")
check("val: bytes of text per token", round(text_bytes / text_tokens, 3), 3.798)
check("...so a token id (2 bytes) is about half the size of its text",
      round(2 * text_tokens / text_bytes, 2), 0.53)
# Both splits' text sizes are recorded beside their tokens (the installed package ships no corpus):
all_text_bytes = meta["train"]["text_bytes"] + meta["val"]["text_bytes"]
check("both splits: bytes of text / all tokens (data/README's 'about 3.7')",
      round(all_text_bytes / (meta["train"]["n_tokens"] + meta["val"]["n_tokens"]), 2), 3.67)

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: the `.npy` header, byte by byte
#
# The core's correction, in detail: what the 64 header "tokens" are, and what they would do.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
some_ids = np.array(val[:1000])  # an in-memory copy
npy = TMP / "tokens.npy"
np.save(npy, some_ids)
wrong = np.memmap(npy, dtype=np.uint16, mode="r")
print("np.memmap, first 8 'tokens':", wrong[:8])
print("the same bytes as text:     ", bytes(wrong[:8])[:40])
check("file size = header + 2 bytes x 1,000 tokens", npy.stat().st_size, 128 + 2000)
check("...the first bytes are the .npy magic string", bytes(wrong[:3]), b"\x93NUMPY")
check("...the real tokens start 64 'tokens' in", np.array_equal(wrong[64:], some_ids), True)
check("header 'ids' beyond our vocabulary of 8,192", int((wrong[:64] >= 8192).sum()), 61)
check("np.load(mmap_mode='r') skips the header: its offset", np.load(npy, mmap_mode="r").offset, 128)
del wrong

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# The damage is real: the 64 header "ids" are mostly invalid (an index error in the
# embedding, or a device-side assert on a GPU), the length is wrong, and every position
# kept elsewhere (document offsets, a split by index) is off by 64. Keep raw `.bin` files
# with a sidecar, as the course does, or open a `.npy` with `np.load(path, mmap_mode="r")`.

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: mapping versus reading, what lands in this process's memory
#
# `np.memmap` maps the file into the process's virtual address space. Nothing is read
# until an element is touched; then the operating system brings in the **page** (4 KiB on
# x86-64 Linux) that holds it. To test that we need a file much larger than a batch: 330
# copies of the training split, 150M tokens, 301 MB, written one copy at a time. A batch
# is windows at random starts (as `get_batch_simple` draws them): we draw eight starts
# and work out the pages they touch before touching the file. Eight windows of 2,049
# tokens (2,048 inputs and the one extra target) are 32,784 bytes of data:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
BIG = TMP / "big.bin"
COPIES = 330
block = np.asarray(train).tobytes()
with open(BIG, "wb") as f:
    for _ in range(COPIES):
        f.write(block)
del block
big_tokens, big_bytes = COPIES * len(train), BIG.stat().st_size
print(f"big.bin: {big_tokens:,} tokens, {format_bytes(big_bytes)}")
check("tokens", big_tokens, 150_282_990)
check("bytes = 2 x tokens", big_bytes, 300_565_980)

PAGE = 4096  # bytes; the page size of x86-64 Linux
RSS_BATCH, RSS_SEQ, RSS_SEED = 8, 2048, 6
starts = torch.randint(big_tokens - RSS_SEQ, (RSS_BATCH,),
                       generator=torch.Generator().manual_seed(RSS_SEED)).numpy()
first_page = 2 * starts // PAGE                    # the byte offset of token i is 2i
last_page = (2 * (starts + RSS_SEQ) + 1) // PAGE   # the last byte of the window
touched = {int(p) for a, b in zip(first_page, last_page, strict=True) for p in range(a, b + 1)}
print("window starts:", starts.tolist())
check("bytes the batch reads", RSS_BATCH * (RSS_SEQ + 1) * 2, 32_784)
check("distinct 4 KiB pages they lie on", len(touched), 16)
check("...that is, this much of the file", len(touched) * PAGE, 65_536)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Now the measurement. A process's **resident set size** (RSS) is the physical memory
# mapped into it now; Linux's `/proc/self/status` splits it into anonymous memory
# (`RssAnon`: heap, numpy arrays) and file-backed pages (`RssFile`: mapped files). We read
# it before and after mapping the file, and after reading the batch (`[measured]`: it
# depends on the kernel; without `/proc` the cell says so and skips):

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
HAVE_PROC = Path("/proc/self/status").exists()


def rss():
    """This process's resident memory in bytes: {'VmRSS', 'RssAnon', 'RssFile'} (Linux)."""
    fields = dict.fromkeys(("VmRSS", "RssAnon", "RssFile"), 0)
    if HAVE_PROC:
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in fields:
                fields[key] = int(value.split()[0]) * 1024  # reported in kB
    return fields


def grown(before, after, key="VmRSS"):
    return (after[key] - before[key]) / 1e6  # MB


gc.collect()
r_start = rss()
mapped = np.memmap(BIG, dtype=np.uint16, mode="r")
r_mapped = rss()
batch = mapped[starts[:, None] + np.arange(RSS_SEQ + 1)]  # the 8 windows: the bytes a sampler reads
r_batch = rss()

if not HAVE_PROC:
    measured("skipped", "resident memory is read from /proc/self/status (Linux only)")
else:
    measured("np.memmap(big.bin): RSS grew by", grown(r_start, r_mapped), "MB")
    measured("...after reading the 8 windows", grown(r_start, r_batch), "MB")
    measured("   of which file-backed (RssFile)", grown(r_start, r_batch, "RssFile"), "MB")
    # computed, not measured: nbval compares these two exactly
    check("the 16 pages the windows lie on (MB)", len(touched) * PAGE / 1e6, 0.065536)
    check("the whole file (MB)", big_bytes / 1e6, 300.56598)
    assert grown(r_start, r_mapped) * 1e6 < 0.01 * big_bytes, r_mapped  # mapping reads nothing
    assert grown(r_start, r_batch) * 1e6 < 0.1 * big_bytes, r_batch     # a batch reads ~nothing
check("the batch read: 8 windows x 2,049 tokens", batch.shape, (8, 2049))

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Now the same file read the ordinary way, with `np.fromfile`, after dropping the map:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
del mapped, batch
gc.collect()
r_before = rss()
whole = np.fromfile(BIG, dtype=np.uint16)
r_read = rss()
n_read = whole.size
del whole
gc.collect()
r_freed = rss()

if not HAVE_PROC:
    measured("skipped", "resident memory is read from /proc/self/status (Linux only)")
else:
    measured("np.fromfile(big.bin): RSS grew by", grown(r_before, r_read), "MB")
    measured("   of which anonymous (RssAnon)", grown(r_before, r_read, "RssAnon"), "MB")
    measured("after del + gc.collect(): RSS changed by", grown(r_read, r_freed), "MB")
    assert grown(r_before, r_read) * 1e6 > 0.9 * big_bytes, r_read  # the whole file
    assert grown(r_read, r_freed) * 1e6 < -0.9 * big_bytes, r_freed  # given back
check("np.fromfile read every token", n_read, big_tokens)
BIG.unlink()
check("big.bin removed", not BIG.exists(), True)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# What the numbers say, and what they do not:
#
# * **Mapping costs nothing, a batch costs megabytes, reading costs the file.** Eight
#   random windows add a few MB of file-backed pages; `np.fromfile` adds all 301 MB as
#   anonymous memory.
# * **More than the 16 touched pages.** On a fault the kernel maps the neighbouring cached
#   pages too (*fault-around*, 64 KiB by default), keeps file data in large folios (up to
#   2 MiB) mapped whole, and reads ahead on an uncached file. "Only the touched pages" holds
#   up to that granularity: megabytes per batch, not the file.
# * **The page cache.** Writing `big.bin` left it in the kernel's page cache, which shows
#   in no process's RSS. The memmap maps those clean, file-backed pages, which the kernel
#   can drop under pressure; `np.fromfile` *copies* them into anonymous memory it cannot
#   drop, so for a moment the data sits in RAM twice.
# * **A full pass is not free.** Touch every token and every page becomes resident, but
#   reclaimable: a 30 TB dataset can be streamed on a machine with far less RAM.

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: uint16 versus int64
#
# uint16 holds ids 0 to 65,535. The danger is that nothing stops a larger id: `astype`
# converts modulo $2^{16}$, so id 70,000 silently becomes 4,464 (torch does the same); only a
# Python literal is range-checked. `write_tokens` refuses both a vocabulary that does not
# fit and an id outside the declared vocabulary:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
check("np: 70,000 -> uint16 silently wraps to 70,000 - 65,536", int(np.array([70_000]).astype(np.uint16)[0]), 4_464)
check("torch: the same", torch.tensor([70_000]).to(torch.uint16).tolist(), [4_464])
err = check("np.array([70_000], dtype=np.uint16) (a literal) is range-checked",
            lambda: np.array([70_000], dtype=np.uint16), raises=OverflowError)
err = check("write_tokens with a 70,001-token vocabulary",
            lambda: write_tokens(TMP / "too_big.bin", np.array([1, 70_000]), 70_001), raises=ValueError)
print("   ", err)
err = check("write_tokens with an id outside the vocabulary",
            lambda: write_tokens(TMP / "out_of_range.bin", np.array([1, 9_000]), 8_192), raises=ValueError)
print("   ", err)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# The ids are widened before they reach the model: `torch.from_numpy` keeps the dtype, and
# PyTorch can store a `torch.uint16` tensor but not index with it.
#
# > **The notes say** the ids are converted to int64 before the embedding because "PyTorch
# > indexing requires" it (§6). **In fact** `nn.Embedding` takes int32 or int64 ids (its docs:
# > "IntTensor or LongTensor"); it is `F.cross_entropy` whose class targets must be int64.
# > int64 for both `x` and `y` is the simple choice. (`torch.from_numpy` on the read-only
# > memmap would also share memory it must not write, and warns; the `astype(np.int64)`
# > copy avoids both problems at once.)

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
ids16 = np.array(val[:8])  # a writable uint16 copy
as_tensor = torch.from_numpy(ids16)
check("torch.from_numpy(uint16 array).dtype", as_tensor.dtype, torch.uint16)
emb = torch.nn.Embedding(8192, 16)
err = check("nn.Embedding with uint16 ids", lambda: emb(as_tensor), raises=RuntimeError)
check("...with int32 ids", tuple(emb(as_tensor.int()).shape), (8, 16))
logits = torch.zeros(8, 8192)
err = check("F.cross_entropy with int32 targets", lambda: F.cross_entropy(logits, as_tensor.int()), raises=RuntimeError)
check("...with int64 targets: log(8192) for uniform logits",
      round(F.cross_entropy(logits, as_tensor.long()).item(), 4), round(math.log(8192), 4))
# the memmap is read-only: torch.from_numpy would share memory it must not write (torch warns,
# once per process); np.array copies into writable memory first, as .astype does in get_batch
check("writable: the memmap's memory, and np.array's copy of it", (val[:8].flags.writeable,
      np.array(val[:8]).flags.writeable), (False, True))

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: a faster `get_batch`, and the same distribution
#
# `get_batch_simple` copies each token twice (`x` and `y` overlap in all but one token per
# window), and converts uint16 to int64 on the way. The course's `get_batch` (what the
# trainer and notebook 08 use) returns the same `x` and `y` for the same generator
# (`tests/test_nb06_data.py` proves it) with one gather and one conversion. A stride trick
# (notebook 01) first: `as_strided` views the uint16 data as a matrix whose row $i$ is the
# window `data[i : i + seq_len + 1]`. Both of its strides are one token, so neighbouring
# rows overlap and the view costs no memory (numpy's `sliding_window_view` builds the same
# view, checked below, but takes longer to build than a small batch takes to copy).
# `window_rows` indexes its rows with the starts: one gather for the whole batch, still
# uint16. `widened` then copies it once into a new int64 tensor, in pinned memory when the
# batch goes to a GPU, so that the copy there runs asynchronously (§6.1). `sample_windows`
# (what `Trainer` uses) widens the windows. `get_batch` views the rows once more, as a
# (2, batch, seq_len) array whose first half is `x` and second half `y`, one token further
# on (a stride trick again: no copy), and widens that view in a single copy into one int64
# tensor, which goes to the device in one transfer.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
# @save lecture_utils/data.py
def window_rows(data, batch_size, seq_len, generator=None):
    """(batch_size, seq_len + 1) windows of `data` at uniform random starts, in its dtype."""
    assert 0 < seq_len < len(data), f"seq_len must be in 1..{len(data) - 1}, got {seq_len}"
    starts = torch.randint(len(data) - seq_len, (batch_size,), generator=generator).numpy()
    step = data.strides[0]
    every_window = np.lib.stride_tricks.as_strided(  # row i is data[i:i + seq_len + 1]: a view
        data, (len(data) - seq_len, seq_len + 1), (step, step), subok=True, writeable=False)
    return every_window[starts]  # one gather for the whole batch


def widened(array, pin_memory=False):
    """`array` copied once into a new int64 tensor (in pinned memory if `pin_memory`)."""
    out = torch.empty(array.shape, dtype=torch.int64, pin_memory=pin_memory)
    np.copyto(out.numpy(), array)
    return out


def sample_windows(data, batch_size, seq_len, generator=None, pin_memory=False):
    """(batch_size, seq_len + 1) int64 windows of `data` at uniform random starts, on the CPU."""
    return widened(window_rows(data, batch_size, seq_len, generator), pin_memory)


def get_batch(data, batch_size, seq_len, device, generator=None):
    """(x, y): contiguous int64 (batch_size, seq_len) tensors on `device`; y is x shifted by one."""
    device = as_device(device)  # a name is checked ("cuda:99" raises); a torch.device passes as is
    rows = window_rows(data, batch_size, seq_len, generator)
    token, row = rows.strides[1], rows.strides[0]
    # x and y as one (2, batch, seq_len) view of the rows: y starts one token further on
    x_and_y = np.lib.stride_tricks.as_strided(rows, (2, batch_size, seq_len), (token, row, token))
    pin = device.type == "cuda"  # pinned host memory: the copy to the GPU runs asynchronously (§6.1)
    both = widened(x_and_y, pin).to(device, non_blocking=True)  # one int64 copy, one transfer
    return both[0], both[1]

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
g_simple, g_fast = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
x_simple, y_simple = get_batch_simple(val, 4, 16, device, generator=g_simple)
x, y = get_batch(val, 4, 16, device, generator=g_fast)
check("get_batch == get_batch_simple, same generator (x, y)", (torch.equal(x, x_simple), torch.equal(y, y_simple)),
      (True, True))
check("...x and y: the two halves of one int64 copy (bytes)",
      (x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr(), x.untyped_storage().nbytes()),
      (True, 2 * 4 * 16 * 8))
every_window = np.lib.stride_tricks.as_strided(val, (len(val) - 16, 17), (2, 2), writeable=False)
check("the windows view: row 5 is val[5:22]", np.array_equal(every_window[5], val[5:22]), True)
check("...it is numpy's sliding_window_view", np.array_equal(
    every_window, np.lib.stride_tricks.sliding_window_view(val, 17)), True)
check("...and shares val's memory (no copy)", np.shares_memory(every_window, val), True)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **The notes' version draws the same windows, given the same range.** Their sampler as
# written (§6), list-based, with the core's off-by-one:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
# @save lecture_utils/data.py
def get_batch_lecture(data, batch_size, seq_len, device):
    """The notes' list-based version (§6), kept verbatim for comparison."""
    starts = torch.randint(len(data) - seq_len - 1, (batch_size,))
    x = torch.stack([torch.from_numpy(data[i:i + seq_len].astype(np.int64)) for i in starts])
    y = torch.stack([torch.from_numpy(data[i + 1:i + seq_len + 1].astype(np.int64)) for i in starts])
    return x.to(device), y.to(device)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Fed the same random bits, `randint(len - seq_len - 1)` and `randint(len - seq_len)` give
# different starts. Hand `get_batch` the data minus its last token, so that the ranges
# coincide, and the two return identical batches from the same seed: apart from the range
# they are the same algorithm.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
B, T, SEED = 8, 64, 3
torch.manual_seed(SEED)  # the notes' version uses the global generator
x_notes, y_notes = get_batch_lecture(train, B, T, "cpu")
x_ours, y_ours = get_batch(train[:-1], B, T, "cpu", generator=torch.Generator().manual_seed(SEED))
check("same seed, same range: (x, y) identical", (torch.equal(x_notes, x_ours), torch.equal(y_notes, y_ours)),
      (True, True))

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# On a real corpus the off-by-one is harmless: one start in 455,000 is never drawn, so the
# last token is never a target.
#
# **The same distribution.** Both samplers should be uniform over their starts. We draw
# 20,000 windows from each on 200 tokens with `seq_len = 8` (192 valid starts; the notes
# reach 191) and compare the counts per start with uniform by a χ² statistic: for $k$
# equally likely starts it has mean $k - 1$ and standard deviation $\sqrt{2(k-1)} \approx 20$.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
hist_data = np.arange(200, dtype=np.uint16)
DRAWS, T_H = 20_000, 8
n_valid = len(hist_data) - T_H
torch.manual_seed(1)
x_notes, _ = get_batch_lecture(hist_data, DRAWS, T_H, "cpu")
x_ours, _ = get_batch(hist_data, DRAWS, T_H, "cpu", generator=torch.Generator().manual_seed(1))
counts = {"notes": np.bincount(x_notes[:, 0].numpy(), minlength=n_valid),
          "get_batch": np.bincount(x_ours[:, 0].numpy(), minlength=n_valid)}
reach = {"notes": n_valid - 1, "get_batch": n_valid}
for name, c in counts.items():
    k = reach[name]
    chi2 = float(((c[:k] - DRAWS / k) ** 2 / (DRAWS / k)).sum())  # against k equally likely starts
    print(f"{name:<10} starts drawn 0..{int(np.flatnonzero(c).max())}, χ² = {chi2:.1f} "
          f"(uniform: {k - 1} ± {math.sqrt(2 * (k - 1)):.0f})")
    check(f"{name}: every start it can reach was drawn", int((c[:k] > 0).sum()), k)
    check(f"{name}: χ² within 3 sd of a uniform sampler",
          abs(chi2 - (k - 1)) < 3 * math.sqrt(2 * (k - 1)), True)
check("the last valid start: drawn by (notes, get_batch)",
      (bool(counts["notes"][-1]), bool(counts["get_batch"][-1])), (False, True))

# %% caption="Windows drawn per start by the notes' sampler and by get_batch over 20,000 draws: both uniform, but the notes' never draws the last start." slideshow={"slide_type": "skip"} tags=["deeper"]
BIN = 16
fig, ax = plt.subplots(figsize=(6.0, 3.0))
for name, c in counts.items():
    ax.stairs(c.reshape(-1, BIN).sum(axis=1) / BIN, np.arange(0, n_valid + 1, BIN), label=name, lw=1.5)
ax.axhline(DRAWS / n_valid, color="0.5", ls=":", lw=1)
ax.set(xlabel=f"window start (mean per start, bins of {BIN})", ylabel="windows drawn per start",
       ylim=(0, None))
ax.set_title("20,000 starts from each sampler: both uniform (the notes never draw 191)",
             loc="left", fontsize=13)
ax.legend(frameon=False, loc="lower left", fontsize=12)
plt.show()

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **Throughput.** The distribution is the same; the cost is not. For a batch of 64 the
# notes' version runs 2 × 64 slices, `astype` calls and tensor constructions in Python,
# then a `torch.stack` that copies everything again; the vectorised one does one gather
# and one conversion. Timed at batch 64 × 1,024 (`benchmarks/get_batch.py` compares it with
# its target, 25×), on one thread: sampling runs on one thread in practice (the `Prefetcher` below
# uses one), and a small op split over two busy cores makes timings swing tenfold.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
t_ours = time_fn(get_batch, train, 64, 1024, device, threads=1, min_run_time=0.2)
t_notes = time_fn(get_batch_lecture, train, 64, 1024, device, threads=1, min_run_time=0.2)
measured("get_batch (vectorised), 64 x 1024", t_ours.median * 1e3, "ms", spread=t_ours)
measured("get_batch_lecture (list-based), 64 x 1024", t_notes.median * 1e3, "ms", spread=t_notes)
measured("speedup", t_notes.median / t_ours.median, "x", spread=(t_notes, t_ours))
measured("vectorised throughput", 64 * 1024 / t_ours.median / 1e6, "M tokens/s", spread=t_ours)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §6.1 Pinned memory
#
# The GPU's copy (DMA) engine cannot read pageable memory, which the OS may move: the CPU
# first copies it into a pinned staging buffer. **Pinned** (page-locked) memory stays put,
# so the copy engine reads it directly and `non_blocking=True` returns before the copy is
# done. The notes' lines:
#
# ```python
# x = x.pin_memory()                   # page-locked host memory
# x = x.to("cuda", non_blocking=True)  # returns before the copy is done
# ```
#
# `x.pin_memory()` is itself a copy, made while the CPU waits: allocate the batch pinned
# (`torch.empty(..., pin_memory=True)`, as the course's `get_batch` does). Pin batches,
# never the dataset.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Say: pageable memory costs a CPU copy into a staging buffer; pinned memory does not.
# - Ask the room: on one stream, can the copy of batch 2 run during the matmuls of batch 1?
# - On a CPU the cell is skipped: show docs/gpu/reference.md.

# %% [markdown] slideshow={"slide_type": "slide"}
# > **The notes say** (§6.1) the copy "can overlap with compute", the GPU computing on this
# > batch while the next is transferred. **In fact** `non_blocking=True` frees the *host*:
# > the CPU prepares the next batch while the GPU works. On the GPU, work on one stream runs
# > in order, so the copy waits behind the kernels queued before it; copy and compute overlap
# > only with the copy on a second stream (from pinned memory, with a free copy engine:
# > PyTorch's tutorial "A guide on good usage of non_blocking and pin_memory()", and the CUDA
# > guide's "Overlap of Data Transfer and Kernel Execution"; the `Prefetcher` below does it).
# > We time when a 256 MiB copy *returns* and when it is *done* (CUDA only):

# %% slideshow={"slide_type": "-"}
import time


def call_and_copy_seconds(dst, src):
    """(seconds until dst.copy_(src, non_blocking=True) returns, seconds until the copy is done)."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    dst.copy_(src, non_blocking=True)  # the notes' x.to("cuda", non_blocking=True)
    call = time.perf_counter() - start
    torch.cuda.synchronize()
    return call, time.perf_counter() - start

# %% slideshow={"slide_type": "slide"} tags=["claim-S30"]
COPY_BYTES = 256 * 2**20
if cuda_only(device, "timing when a non_blocking copy returns"):
    pageable = torch.ones(COPY_BYTES // 4)  # float32 in ordinary host memory
    pinned = pageable.pin_memory()  # the notes' x.pin_memory()
    on_gpu = torch.empty_like(pageable, device=device)
    call, copy = min(call_and_copy_seconds(on_gpu, pageable) for _ in range(5))  # best of 5, by the call
    measured("non_blocking from pageable: the call returns after", call * 1e3, "ms", per_device=True)
    measured("non_blocking from pageable: call / copy", call / copy, per_device=True)
    assert call / copy > 0.5, (call, copy)  # pageable: the call waits for (nearly) the whole copy
    call, copy = min(call_and_copy_seconds(on_gpu, pinned) for _ in range(5))
    measured("non_blocking from pinned: the call returns after", call * 1e3, "ms", per_device=True, ref="non-blocking-pinned")
    measured("non_blocking from pinned: call / copy", call / copy, per_device=True)
    assert call / copy < 0.1, (call, copy)  # pinned: the call returns long before the copy is done
    assert torch.equal(on_gpu[:4].cpu(), pinned[:4])  # the copy arrived

# %% [markdown]
# From pinned memory the call returns at once; from pageable memory only when nearly the
# whole copy is done, `non_blocking` or not (docs/gpu/reference.md, `non-blocking-pinned`).
# "Going deeper" times a copy on a second stream against one stream.

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: copy bandwidth, streams, and a prefetcher
#
# The copy engines read host memory by physical address, without the CPU; that is why the
# kernel must not move a page they read. The course's `get_batch` pins its batch on CUDA.
# These cells need a CUDA GPU; elsewhere each prints one line saying so. The first times a
# blocking 256 MiB copy to the GPU from pageable and from pinned memory (published H100
# figures and the benchmark's target: docs/gpu/reference.md, `h2d-pinned`):

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
if cuda_only(device, "timing pageable versus pinned host-to-device copies"):
    assert not pageable.is_pinned() and pinned.is_pinned()  # the buffers of the core cell
    rate = {name: COPY_BYTES / time_fn(on_gpu.copy_, src, threads=1, min_run_time=0.3).median  # a blocking copy
            for name, src in (("pageable", pageable), ("pinned", pinned))}
    measured(f"pageable -> GPU, {format_bytes(COPY_BYTES)}", rate["pageable"] / 1e9, "GB/s", per_device=True,
             ref="h2d-pageable")
    measured(f"  pinned -> GPU, {format_bytes(COPY_BYTES)}", rate["pinned"] / 1e9, "GB/s", per_device=True,
             ref="h2d-pinned")
    measured("pinned / pageable", rate["pinned"] / rate["pageable"], "x", per_device=True)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **What overlaps with what.** The host overlaps for sure: the CPU prepares the next batch
# while the copy runs. On the GPU, work on one CUDA *stream* runs in order, so a copy on
# the computing stream waits for the compute before it, and the compute after it waits for
# the copy. For the copy engine and the compute units to work at once, the copy must go on
# a second stream (as the `Prefetcher` does). We queue four bf16 matmuls and a 256 MiB
# pinned copy on one stream, then the copy on a side stream:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
if cuda_only(device, "overlapping a copy with compute on a second stream"):
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    side = torch.cuda.Stream(device)

    def compute():
        for _ in range(4):
            a @ a

    def serial():
        compute()
        on_gpu.copy_(pinned, non_blocking=True)  # same stream: after the matmuls

    def overlapped():
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            on_gpu.copy_(pinned, non_blocking=True)  # side stream: alongside the matmuls
        compute()
        torch.cuda.current_stream(device).wait_stream(side)

    t_compute, t_copy, t_serial, t_overlap = (
        time_fn(fn, *args, threads=1, min_run_time=0.3).median
        for fn, *args in ((compute,), (on_gpu.copy_, pinned, True), (serial,), (overlapped,)))
    measured("4 bf16 matmuls of 8192^3", t_compute * 1e3, "ms", per_device=True)
    measured("256 MiB pinned copy", t_copy * 1e3, "ms", per_device=True)
    measured("both on one stream", t_serial * 1e3, "ms", per_device=True)
    measured("copy on a second stream", t_overlap * 1e3, "ms", per_device=True, ref="copy-compute-overlap")
    measured("second stream / one stream", t_overlap / t_serial, per_device=True)
    assert t_serial > 0.9 * (t_compute + t_copy), (t_serial, t_compute, t_copy)  # one stream: one after the other
    assert t_overlap < 0.9 * t_serial, (t_overlap, t_serial)  # a second stream: the copy hides under compute
    del a, pageable, pinned, on_gpu
    torch.cuda.empty_cache()

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### Overlap: prepare the next batch while this one computes
#
# The notes' ideal pipeline: while the GPU computes on this batch, the CPU samples the
# next one and starts its copy. `Prefetcher` (machinery in `lecture_utils.data`) is that
# pipeline: a background thread calls `get_batch`, on a side stream on CUDA, and keeps up
# to `depth` batches ready in a queue. It draws from the generator in the same order, so a
# seeded prefetcher yields exactly `get_batch`'s batches:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
with Prefetcher(train, 4, 64, device, generator=torch.Generator().manual_seed(5)) as batches:
    prefetched = [next(batches) for _ in range(3)]
g = torch.Generator().manual_seed(5)
inline = [get_batch(train, 4, 64, device, generator=g) for _ in range(3)]
check("Prefetcher == get_batch, same seed (3 batches, x and y)",
      [torch.equal(p, q) for pb, qb in zip(prefetched, inline, strict=True)
       for p, q in zip(pb, qb, strict=True)], [True] * 6)
check("...on the device", all(t.device.type == device.type for pb in prefetched for t in pb),
      True)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Now a training step (forward and backward of the course's tiny GPT) fed three ways:
# from one batch already on the device (the floor: no data loading), from `get_batch`
# inline, and from the `Prefetcher`. The batch is 4 × 64 tokens on a CPU, 16 × 128 on a
# GPU. On a CPU the step runs on one thread, leaving the other core to the loader thread.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
BATCH, SEQ = (16, 128) if ON_GPU else (4, 64)
threads = torch.get_num_threads()
if not ON_GPU:
    torch.set_num_threads(1)  # restored at the end of the notebook
torch.manual_seed(0)
model = GPT(get_config("tiny")).to(device)


def train_step(x, y):
    logits = model(x)
    loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
    model.zero_grad(set_to_none=True)
    loss.backward()


x_fixed, y_fixed = get_batch(train, BATCH, SEQ, device, generator=torch.Generator().manual_seed(0))
g_inline = torch.Generator().manual_seed(1)
t_data = time_fn(get_batch, train, BATCH, SEQ, device, threads=1, min_run_time=0.1).median
t_fixed = time_fn(train_step, x_fixed, y_fixed, threads=1, min_run_time=0.2).median
t_inline = time_fn(lambda: train_step(*get_batch(train, BATCH, SEQ, device, generator=g_inline)),
                   threads=1, min_run_time=0.2).median
with Prefetcher(train, BATCH, SEQ, device, generator=torch.Generator().manual_seed(1)) as batches:
    t_prefetched = time_fn(lambda: train_step(*next(batches)), threads=1, min_run_time=0.2).median
measured(f"get_batch alone, {BATCH} x {SEQ}", t_data * 1e3, "ms", per_device=True)  # the shape differs on a GPU
measured("step, batch already on the device", t_fixed * 1e3, "ms")
measured("step, get_batch inline", t_inline * 1e3, "ms")
measured("step, Prefetcher", t_prefetched * 1e3, "ms")
measured("data loading / step", t_data / t_fixed)
measured("step with the Prefetcher / step with the batch already there", t_prefetched / t_fixed)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Sampling token ids from a local memory-mapped file is cheap: a fraction of a
# millisecond, next to a step of milliseconds on a GPU and tens of milliseconds here. The
# prefetcher has little to hide; on a GPU it should bring the step to within a few percent
# of the floor. On a two-core CPU the loader thread needs the second core and both threads
# share Python's interpreter lock, so the three step times differ by noise more than by
# loading. These are timings, printed, not asserted: speed targets live in `benchmarks/`.
#
# Overlap pays off when loading is slow (a network filesystem, decompression). To see it
# we simulate storage latency: `SlowStorage` is the token array, except that every read
# first waits one step. Waiting uses no core and releases the interpreter lock, so even on
# two cores a background thread can wait while the step computes:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
class SlowStorage(np.ndarray):
    """Token ids behind storage that takes `delay` seconds to answer every read."""

    delay = 0.0

    def __getitem__(self, index):
        time.sleep(self.delay)  # waiting on I/O: no CPU, no interpreter lock
        return np.asarray(self)[index]


slow = np.asarray(train).view(SlowStorage)
SlowStorage.delay = t_fixed  # one step of latency per batch
g_slow = torch.Generator().manual_seed(1)
t_slow_inline = time_fn(lambda: train_step(*get_batch(slow, BATCH, SEQ, device, generator=g_slow)),
                        threads=1, min_run_time=0.2).median
with Prefetcher(slow, BATCH, SEQ, device, generator=torch.Generator().manual_seed(1)) as batches:
    t_slow_prefetched = time_fn(lambda: train_step(*next(batches)), threads=1, min_run_time=0.2).median
measured("storage latency per batch", SlowStorage.delay * 1e3, "ms")
measured("step, batch already on the device", t_fixed * 1e3, "ms")
measured("step, slow storage, get_batch inline", t_slow_inline * 1e3, "ms")
measured("step, slow storage, Prefetcher", t_slow_prefetched * 1e3, "ms")
measured("slow storage, Prefetcher / inline", t_slow_prefetched / t_slow_inline)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Inline, every step pays the latency on top of the compute; with the prefetcher the wait
# happens during the previous step, and the step returns to about the floor (on a shared
# CPU the step time itself swings tenfold, so compare the ratios, not one run). A prefetcher hides
# loading only up to one step's length; beyond that the fix is more loading threads or
# processes (`torch.utils.data.DataLoader`'s `num_workers`), not a deeper queue.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### The timeline: when each batch is loaded and when it is used
#
# The step times above are averages. To *see* the overlap we record timestamps instead:
# `TimedStorage` is `SlowStorage` that also logs when each read starts and ends (and on
# which thread), and the step is a fake compute (a few matmuls, timed around the call).
# The storage latency is set to one compute's length. Six steps inline, then six from a
# `Prefetcher`, both from generators seeded alike; the time origin of each run is its
# first read. (The prefetcher also reads ahead past step 6; only the first six reads are
# drawn.)

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
class TimedStorage(SlowStorage):
    """SlowStorage that logs (thread id, start, end) of every read."""

    log: list = []

    def __getitem__(self, index):
        start = time.perf_counter()
        out = super().__getitem__(index)
        TimedStorage.log.append((threading.get_ident(), start, time.perf_counter()))
        return out


N_MM = 1024 if ON_GPU else 384
mm_a = torch.randn(N_MM, N_MM).to(device)  # drawn on the CPU: the same numbers on every device


def fake_compute(x):
    """A few matmuls standing in for a training step (the batch is not used)."""
    z = mm_a
    for _ in range(4):
        z = z @ mm_a / N_MM
    if ON_GPU:
        torch.cuda.synchronize()
    return z


timed = np.asarray(train).view(TimedStorage)
TimedStorage.delay = time_fn(fake_compute, x_fixed, threads=1, min_run_time=0.05).median
TL_STEPS = 6
main_thread = threading.get_ident()


def run_timeline(batches):
    """Time TL_STEPS compute spans; returns them, the batches used, and the loads logged."""
    computes, used = [], []
    for _ in range(TL_STEPS):
        x, y = next(batches)
        start = time.perf_counter()
        fake_compute(x)
        computes.append((start, time.perf_counter()))
        used.append((x.cpu(), y.cpu()))
    return computes, used


TimedStorage.log = []
g_tl = torch.Generator().manual_seed(7)
inline_batches = (get_batch(timed, BATCH, SEQ, device, generator=g_tl) for _ in range(TL_STEPS))
tl_inline, used_inline = run_timeline(inline_batches)
loads_inline = [(s, e) for tid, s, e in TimedStorage.log]
TimedStorage.log = []
with Prefetcher(timed, BATCH, SEQ, device, generator=torch.Generator().manual_seed(7)) as batches:
    tl_pref, used_pref = run_timeline(batches)
loads_pref = [(s, e) for tid, s, e in TimedStorage.log if tid != main_thread][:TL_STEPS]

check("inline: one read per step, all on the main thread", len(loads_inline), TL_STEPS)
check("the same batches in both runs (same seed, x and y)",
      [torch.equal(p, q) for a, b in zip(used_inline, used_pref, strict=True)
       for p, q in zip(a, b, strict=True)], [True] * (2 * TL_STEPS))
measured("storage latency per read = one fake compute", TimedStorage.delay * 1e3, "ms")
measured(f"{TL_STEPS} steps, inline", (tl_inline[-1][1] - loads_inline[0][0]) * 1e3, "ms")
measured(f"{TL_STEPS} steps, Prefetcher", (tl_pref[-1][1] - loads_pref[0][0]) * 1e3, "ms")

# %% caption="Timeline of loads and computes for get_batch inline and for the Prefetcher: the background thread hides each load under the previous compute." slideshow={"slide_type": "skip"} tags=["deeper"]
fig, axes = plt.subplots(2, 1, figsize=(10, 5), sharex=True)
for ax, (title, loads, computes) in zip(
        axes, (("get_batch inline", loads_inline, tl_inline),
               ("Prefetcher (background thread)", loads_pref, tl_pref)), strict=True):
    origin = loads[0][0]
    ax.broken_barh([((s - origin) * 1e3, (e - s) * 1e3) for s, e in loads], (10, 8),
                   color="tab:orange", edgecolor="white", label="load (read from storage)")
    ax.broken_barh([((s - origin) * 1e3, (e - s) * 1e3) for s, e in computes], (0, 8),
                   color="tab:blue", edgecolor="white", label="compute")
    ax.set_yticks([4, 14], ["compute", "load"], fontsize=12)
    ax.set_title(title, fontsize=13)
    ax.tick_params(axis="x", labelsize=12)
axes[1].set_xlabel("time since the first read (ms)", fontsize=12)
fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=2, frameon=False,
           fontsize=12)
fig.suptitle(f"{TL_STEPS} steps, storage latency = one compute", fontsize=14)
fig.tight_layout(rect=(0, 0.07, 1, 1))
plt.show()

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Inline, the bars alternate: the step waits for its read, then computes, so the run takes
# about twice the compute. With the prefetcher the next read sits under the current
# compute, and after the first read the compute bars follow each other almost without
# gaps.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
torch.set_num_threads(threads)
scratch.cleanup()
check("temporary folder removed", not TMP.exists(), True)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What to remember
#
# - Token ids as uint16 (2 bytes; GPT-2's 50,257 ids fit), memory-mapped: a batch reads
#   only the pages it touches. `np.memmap` wants a raw file, not a `.npy`.
# - A batch is windows of `seq_len + 1` tokens at random starts `0 .. len - seq_len - 1`;
#   `y` is `x` shifted by one. Widen the batch, not the dataset, to int64.
# - Pinned host memory (allocate the batch pinned) and `non_blocking=True` free the CPU to
#   prepare the next batch; the copy overlaps GPU compute only on a second stream.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Read the bullets; the two numbers: 2 bytes per token on disk, 8 per token in a batch.
# - Ask the room: what limits the uint16 choice, and what would you do past it?

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# The notes' self-test has no question on data loading; here is one of our own. Fill in
# the `...`, run the cell and the check under it (it says whether you are right, not the
# answer), then expand the hidden solution.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - E6.1 is dtype arithmetic for 15T tokens; E6.2 (after the lecture) follows one batch from disk to GPU bytes.
# - Give two minutes, then run the check cell live.

# %% [markdown] slideshow={"slide_type": "-"}
# ### E6.1 How big is a 15T-token dataset?
#
# The §1.1 model trains on 15T tokens. How many bytes is that stored as uint16, and as
# int64? Llama 3's vocabulary has 128,256 tokens: which unsigned dtype does it need, and
# what does the dataset cost then? (`format_bytes` gives decimal and binary units.)

# %% tags=["exercise"]
e6_1_uint16_bytes = ...  # bytes of 15T token ids stored as uint16
e6_1_int64_bytes = ...  # bytes of the same ids as int64
e6_1_llama3_dtype = ...  # smallest unsigned numpy dtype for 128,256 ids, as a string, e.g. "uint8"
e6_1_llama3_bytes = ...  # bytes of the 15T-token dataset in that dtype

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
from lecture_utils import check_answer

check_answer("E6.1 uint16 bytes", e6_1_uint16_bytes)
check_answer("E6.1 int64 bytes", e6_1_int64_bytes)
check_answer("E6.1 dtype for 128,256 ids", e6_1_llama3_dtype)
check_answer("E6.1 bytes in that dtype", e6_1_llama3_bytes)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["solution"]
# <details>
# <summary><b>Solution</b> (open it once you have tried)</summary>
#
# Answer. 15e12 tokens x 2 bytes = 30 TB (27.3 TiB) in uint16, x 8 bytes = 120 TB (109 TiB)
# in int64: 4x more, for ids that never exceed 16 bits. 128,256 ids need 17 bits, so uint16
# cannot hold them (ids above 65,535 would wrap); the next size, uint32, makes the dataset
# 60 TB (54.6 TiB). Which is why the dataset stays narrow on disk and only each batch is
# widened to int64.
#
# ```python
# n_tokens = 15 * 10**12
# e6_1_uint16_bytes, e6_1_int64_bytes = 2 * n_tokens, 8 * n_tokens
# e6_1_llama3_dtype = next(t for t in ("uint8", "uint16", "uint32") if np.iinfo(t).max >= 128_256 - 1)
# e6_1_llama3_bytes = np.dtype(e6_1_llama3_dtype).itemsize * n_tokens
# check_answer("E6.1 uint16 bytes", e6_1_uint16_bytes)
# check_answer("E6.1 int64 bytes", e6_1_int64_bytes)
# check_answer("E6.1 dtype for 128,256 ids", e6_1_llama3_dtype)
# check_answer("E6.1 bytes in that dtype", e6_1_llama3_bytes)
# ```
#
# </details>

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ## Going deeper: more exercises
#
# One more exercise, for practice after the lecture: one batch followed from disk pages to GPU bytes.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# ### E6.2 What does one batch cost?
#
# A run samples batches of 64 sequences with `seq_len = 1024` from that 30 TB uint16 file.
# Each sequence is read as one window of 1,025 tokens: its 1,024 inputs `x` and one more
# token, since `y` is the same window shifted by one. Per step:
#
# 1. How many bytes of token ids does the batch read from the file (64 windows)?
# 2. The operating system reads whole 4 KiB pages. How many pages does one 1,025-token
#    window touch at most, and on average? (A window starts at a random token, so at an even
#    byte offset. Work the average out exactly, or estimate it by drawing random starts: an
#    estimate within 1% counts.) How many bytes come off the disk per batch, then, if
#    nothing is cached?
# 3. How big are `x` and `y` together on the GPU, as int64? How many such pairs fit in 80 GB?

# %% slideshow={"slide_type": "skip"} tags=["exercise", "deeper"]
e6_2_batch_bytes = ...  # 1. bytes of token ids the batch reads: 64 windows of 1,025 uint16 tokens
e6_2_pages_max = ...  # 2. 4 KiB pages one 1,025-token window touches, at most
e6_2_pages_mean = ...  # 2. ...and on average
e6_2_read_bytes = ...  # 2. bytes read from disk per batch, nothing cached (whole pages)
e6_2_xy_bytes = ...  # 3. bytes of x and y together on the GPU, each (64, 1024) int64
e6_2_batches_80gb = ...  # 3. how many such (x, y) pairs fit in 80e9 bytes

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check", "deeper"]
from lecture_utils import check_answer

check_answer("E6.2 1. batch bytes on disk", e6_2_batch_bytes)
check_answer("E6.2 2. pages per window, at most", e6_2_pages_max)
check_answer("E6.2 2. pages per window, on average", e6_2_pages_mean)
check_answer("E6.2 2. bytes read per batch", e6_2_read_bytes)
check_answer("E6.2 3. x + y bytes", e6_2_xy_bytes)
check_answer("E6.2 3. batches in 80 GB", e6_2_batches_80gb)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["solution", "deeper"]
# <details>
# <summary><b>Solution</b> (open it once you have tried)</summary>
#
# Answer. (1) 64 windows x 1,025 tokens x 2 bytes = 131,200 bytes (x and y share all but one
# token per window). (2) A window is 2,050 bytes, so at most 2 pages. Its start is an even
# byte offset, uniform within a page, and it runs into a second page when it starts past
# byte 4096 - 2050: 1.5 pages on average, so 64 x 1.5 x 4 KiB = 384 KiB read per batch, 3x
# the bytes used (more with readahead): random access has read amplification. (3) x and y
# are 2 x 64 x 1,024 x 8 bytes = 1 MiB; 80 GB holds 76,293 of them. The batch is never what
# fills a GPU; the activations it produces are (notebook 04, §4.3).
#
# ```python
# batch, seq_len, page = 64, 1024, 4096
# window_bytes = 2 * (seq_len + 1)
# starts = torch.randint(15 * 10**12 - seq_len, (100_000,), generator=torch.Generator().manual_seed(0)).numpy()
# pages = (2 * (starts + seq_len) + 1) // page - 2 * starts // page + 1  # last byte's page - first's + 1
# print(f"pages per window over 100,000 random starts: max {pages.max()}, mean {pages.mean():.2f}")
# e6_2_batch_bytes, e6_2_pages_max, e6_2_pages_mean = batch * window_bytes, 2, 1 + (window_bytes - 2) / page
# e6_2_read_bytes = batch * e6_2_pages_mean * page
# e6_2_xy_bytes = 2 * batch * seq_len * 8
# e6_2_batches_80gb = int(80e9 // e6_2_xy_bytes)
# check_answer("E6.2 1. batch bytes on disk", e6_2_batch_bytes)
# check_answer("E6.2 2. pages per window, at most", e6_2_pages_max)
# check_answer("E6.2 2. pages per window, on average", e6_2_pages_mean)
# check_answer("E6.2 2. bytes read per batch", e6_2_read_bytes)
# check_answer("E6.2 3. x + y bytes", e6_2_xy_bytes)
# check_answer("E6.2 3. batches in 80 GB", e6_2_batches_80gb)
# ```
#
# </details>
