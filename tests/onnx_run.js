// onnx_run.js - run an ONNX model with onnxruntime-node on .npy inputs and write
// each output as .npy: tests/test_onnx.c compares them with `tgraph run`.
//
//   NODE_PATH=DIR/node_modules node tests/onnx_run.js MODEL.onnx OUTDIR NAME=FILE.npy...
//
// Reads .npy v1-v3 of <f4, <f8, <i8 and |b1 (C order); writes <f4, <f8 or <i8.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const DTYPES = {'<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
                '<i8': ['int64', BigInt64Array], '|b1': ['bool', Uint8Array]};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(file + ': not a .npy file');
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(file + ': fortran_order');
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',')
    .map((s) => s.trim()).filter((s) => s.length).map(Number);
  const [type, Arr] = DTYPES[descr] || [];
  if (!type) throw new Error(file + ': dtype ' + descr);
  const off = start + hlen, n = shape.reduce((a, b) => a * b, 1);
  const bytes = buf.subarray(off, off + n * Arr.BYTES_PER_ELEMENT);
  const data = new Arr(n);
  new Uint8Array(data.buffer).set(bytes);
  return new ort.Tensor(type, type === 'bool' ? Array.from(data, (v) => v !== 0) : data, shape);
}

function writeNpy(file, t) {
  const descr = {float32: '<f4', float64: '<f8', int64: '<i8'}[t.type];
  if (!descr) throw new Error('output type ' + t.type);
  const shape = t.dims.length === 1 ? '(' + t.dims[0] + ',)' : '(' + t.dims.join(', ') + ')';
  let h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ', }';
  while ((10 + h.length + 1) % 64) h += ' ';
  h += '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(h.length, 8);
  const d = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(h, 'latin1'), d]));
}

async function main() {
  const [model, outdir, ...items] = process.argv.slice(2);
  const feeds = {};
  for (const it of items) {
    const eq = it.indexOf('=');
    feeds[it.slice(0, eq)] = readNpy(it.slice(eq + 1));
  }
  const opts = {graphOptimizationLevel: 'disabled', intraOpNumThreads: 1, interOpNumThreads: 1};
  const session = await ort.InferenceSession.create(model, opts);
  const out = await session.run(feeds);
  for (const name of Object.keys(out)) writeNpy(path.join(outdir, name + '.npy'), out[name]);
}

main().catch((e) => {
  console.error('onnx_run.js: ' + (e && e.message ? e.message : e));
  process.exit(1);
});
