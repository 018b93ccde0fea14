#!/usr/bin/python3
"""Write the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/.

Run from anywhere with /usr/bin/python3 (numpy only); the output is
deterministic, so re-running it changes nothing. Seeds are small valid inputs
(and a few near misses) that show each target the input layout it expects.

The other files in corpus/<target>/ (named by their SHA-1) are what long
local runs found, minimised to the inputs that add coverage:
    build-fuzz/fuzz_T -merge=1 tests/fuzz/corpus/T build-fuzz/corpus/T
so a short CI run starts from where the long runs got to.
"""
import io, json, os, struct
import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- einsum: [n] then per operand [rank][dims...], then the equation ----
def einsum_seed(shapes, eq):
    b = bytes([len(shapes)])
    for s in shapes:
        b += bytes([len(s)] + list(s))
    return b + eq.encode()

for i, (shapes, eq) in enumerate([
    ([(2, 3), (3, 2)], "ij,jk->ik"),
    ([(3, 3)], "ii->i"),
    ([(3, 3)], "ii"),
    ([(2, 3)], "ij->ji"),
    ([(2, 3)], "ij->"),
    ([(1, 2, 3), (2, 3, 2)], "...ij,...jk->...ik"),
    ([(2, 2, 3, 1), (2, 3, 1, 2)], "bhls,bshd->blhd"),
    ([(2,), (3,)], "i,j->ij"),
    ([(2,), (2,), (2,)], "i,i,i->"),
    ([(2, 3), (2, 3)], "ij,ij->ij"),
    ([(3, 1, 2)], "a...->...a"),
    ([(2, 0)], "ij->j"),
    ([()], "->"),
    ([(2, 3), (3,)], "ij, j -> i"),
    ([(2, 3), (3,)], "ij,j"),
]):
    put("einsum", "seed%02d" % i, einsum_seed(shapes, eq))

# ---- einops: [op][rank][dims...][n_kw][lens...] then pattern \n names ----
OPS = {"rearrange": 0, "repeat": 1, "sum": 2, "mean": 3, "max": 4, "min": 5}

def einops_seed(op, shape, pattern, kw=()):
    b = bytes([OPS[op], len(shape)] + list(shape) + [len(kw)] + [l & 0xff for _, l in kw])
    return b + "\n".join([pattern] + [n for n, _ in kw]).encode()

for i, args in enumerate([
    ("rearrange", (2, 3, 4), "b h w -> b (h w)"),
    ("rearrange", (2, 6), "b (h d) -> b h d", [("h", 2)]),
    ("rearrange", (2, 3, 4), "b ... -> ... b"),
    ("rearrange", (2, 1, 3), "a 1 b -> b a"),
    ("rearrange", (2, 3), "a b -> a () b"),
    ("rearrange", (4, 3), "(a1 a2) b -> a2 (b a1)", [("a1", 2)]),
    ("repeat", (2, 3), "a b -> a b c", [("c", 2)]),
    ("repeat", (2, 3), "a b -> (c a) b", [("c", 3)]),
    ("repeat", (3,), "a -> a 2"),
    ("sum", (2, 3, 4), "a b c -> a"),
    ("mean", (2, 3, 4), "a b c -> a c"),
    ("max", (2, 4), "a (b c) -> a b", [("c", 2)]),
    ("min", (2, 3, 4), "a ... -> a"),
    ("rearrange", (), " -> "),
    ("rearrange", (2, 3), "a b -> b a"),
    ("rearrange", (2, 0, 3), "a b c -> (a b) c"),
]):
    put("einops", "seed%02d" % i, einops_seed(*args))

# ---- npy: real numpy files of every accepted kind, plus near misses ----
def npy_bytes(a, version=None):
    f = io.BytesIO()
    if version is None:
        np.save(f, a)
    else:
        np.lib.format.write_array(f, a, version=version)
    return f.getvalue()

rng = np.random.default_rng(0)
put("npy", "f4_2x3", npy_bytes(np.arange(6, dtype="<f4").reshape(2, 3)))
put("npy", "f8_4", npy_bytes(np.linspace(0, 1, 4)))
put("npy", "i8_scalar", npy_bytes(np.array(7, dtype="<i8")))
put("npy", "b1_3", npy_bytes(np.array([True, False, True])))
put("npy", "f4_empty", npy_bytes(np.zeros((0, 4), dtype="<f4")))
put("npy", "f4_fortran", npy_bytes(np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3))))
put("npy", "f4_v2", npy_bytes(np.arange(3, dtype="<f4"), version=(2, 0)))
put("npy", "f4_v3", npy_bytes(np.arange(3, dtype="<f4"), version=(3, 0)))
put("npy", "f4_rank8", npy_bytes(np.zeros((1, 2, 1, 2, 1, 2, 1, 2), dtype="<f4")))
put("npy", "big_endian", npy_bytes(np.arange(2, dtype=">f4")))
put("npy", "i4", npy_bytes(np.arange(2, dtype="<i4")))
hdr = b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"
hdr += b" " * (118 - len(hdr) - 1) + b"\n"
put("npy", "handmade", b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr + b"\0" * 8)
hdr = b'{"shape":(2,),"descr":"<f4","fortran_order":False}'
put("npy", "dquote_nopad", b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr + b"\0" * 8)

# ---- safetensors: header JSON + buffer ----
def st_bytes(header, buf, pad=True):
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + buf

put("safetensors", "i32_2x2", st_bytes(
    {"test": {"dtype": "I32", "shape": [2, 2], "data_offsets": [0, 16]}}, bytes(16)))
put("safetensors", "two_meta", st_bytes(
    {"__metadata__": {"format": "pt"},
     "a.weight": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
     "a.bias": {"dtype": "F64", "shape": [2], "data_offsets": [24, 40]}},
    np.arange(6, dtype="<f4").tobytes() + np.arange(2, dtype="<f8").tobytes()))
put("safetensors", "empty", st_bytes({}, b""))
put("safetensors", "zero_sized", st_bytes(
    {"z": {"dtype": "F32", "shape": [2, 0], "data_offsets": [0, 0]}}, b""))
put("safetensors", "scalar_i64", st_bytes(
    {"s": {"dtype": "I64", "shape": [], "data_offsets": [0, 8]}}, struct.pack("<q", -3)))
put("safetensors", "f16_bf16", st_bytes(
    {"h": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]},
     "b": {"dtype": "BF16", "shape": [2], "data_offsets": [4, 8]}},
    np.array([1.5, -2], dtype="<f2").tobytes() + b"\x80\x3f\x00\xc0"))
put("safetensors", "ints", st_bytes(
    {"u8": {"dtype": "U8", "shape": [3], "data_offsets": [0, 3]},
     "i16": {"dtype": "I16", "shape": [1], "data_offsets": [3, 5]},
     "bool": {"dtype": "BOOL", "shape": [1], "data_offsets": [5, 6]}}, bytes(6)))
put("safetensors", "ws_pad", struct.pack("<Q", 12) + b" {} \t\n\r     ")

# ---- value / config: one item per line ----
put("value", "items", "d_model=512\nn_heads=8\nmask_flag=true\nscale=null\n"
    "dropout=0.1\nshape=[2, 3]\npattern='b l h e'\nname=\"x\"\nmode=mean\n")
put("value", "floats", "a=1e-5\nb=-inf\nc=nan\nd=-0.0\ne=0x10\nf=1_000\n")
put("value", "nested", "a=[[1, 2], [3, [4]], []]\nb=['x', \"y\", z]\n")
put("value", "bad", "=1\na\na=[2,\na='x\n1a=2\na.b_c=3\n")

# ---- json: byte 0 = options, then the document ----
for i, doc in enumerate([
    '{"a": [1, 2.5, -3e2, true, false, null], "b": {"c": "d\\u00e9\\ud83d\\ude00"}}',
    '[]', '""', '0', '{"a": 1, "a": 2}', '[[[[[[]]]]]]', '"\\n\\t\\"\\\\\\/"',
    '{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}',
    '  {"x" : -0.0e+0 } ', '[1,]', '{"a":1}x', '9223372036854775808',
]):
    put("json", "seed%02d" % i, bytes([i % 8]) + doc.encode())

# ---- csv: ETT layout ----
put("csv", "ett", "date,HUFL,HULL,OT\n2016-07-01 00:00:00,5.827,2.009,30.531\n"
    "2016-07-01 01:00:00,5.693,2.076,27.787\n")
put("csv", "plain", "a,b\n1,2\n3,4\n\n5,6\n")
put("csv", "crlf_quoted", "\"a\",\"b\"\r\n\"1.5\",-2e3\r\n")
put("csv", "cr_only", "date,a,b\r2016-07-01,1.5,-2e3\r2016-07-02,+.5,3.\r\r")
put("csv", "hex_cell", "a,b\n1,0x10\n")
