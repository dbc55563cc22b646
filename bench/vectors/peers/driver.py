#!/usr/bin/python3
"""Peer driver of bench-vectors' "peers" section: FAISS IndexBinaryIVF on
the bench's binary codes (rescored with float dot products, as the engine
does) and hnswlib on the float vectors.

Run once as `driver.py DIR`. DIR holds what bench/vectors/peers.go wrote:
meta.json, vectors.f32 (n x dims little-endian float32), codes.u8
(n x dims/8 bytes: the engine's uint64 code words, little-endian),
queries.f32 and qcodes.u8 likewise. For every point of each curve the
driver writes the top-k ids (nq x k int32, -1 for none) to a file of DIR
(one file per pass: the Go side may still be reading
the previous one) and prints one JSON line on stdout; the Go side computes recall against
its exact answers. Times are taken in-process with time.perf_counter:
Python start-up, loading and index build are excluded from query times
(build time is reported separately). Everything runs on one thread.
"""
import json
import os
import sys
import time

import numpy as np


def emit(**kv):
    print(json.dumps(kv), flush=True)


def load(d):
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    n, dims, nq = meta["n"], meta["dims"], meta["nq"]

    def arr(name, dtype, rows, cols):
        return np.fromfile(os.path.join(d, name), dtype=dtype).reshape(rows, cols)

    vecs = arr("vectors.f32", "<f4", n, dims)
    codes = arr("codes.u8", np.uint8, n, dims // 8)
    queries = arr("queries.f32", "<f4", nq, dims)
    qcodes = arr("qcodes.u8", np.uint8, nq, dims // 8)
    return meta, vecs, codes, queries, qcodes


def rescore(vecs, queries, cand, k):
    """Top k of each query's candidates by float dot product (-1: none)."""
    safe = np.where(cand < 0, 0, cand)
    scores = np.einsum("qcd,qd->qc", vecs[safe], queries)
    scores[cand < 0] = -np.inf
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    top = np.take_along_axis(cand, order, axis=1)
    top[np.take_along_axis(scores, order, axis=1) == -np.inf] = -1
    return top


def save(d, name, ids):
    path = os.path.join(d, name)
    np.ascontiguousarray(ids, dtype="<i4").tofile(path)
    return name


def run_faiss(d, meta, vecs, codes, queries, qcodes):
    import faiss

    faiss.omp_set_num_threads(1)
    dims, k, cands = meta["dims"], meta["k"], meta["rescore"]
    start = time.perf_counter()
    index = faiss.IndexBinaryIVF(faiss.IndexBinaryFlat(dims), dims, meta["nlist"])
    # The engine's training budget: ivf.DefaultConfig's iterations and
    # sample per centroid.
    index.cp.niter = meta["train_iterations"]
    index.cp.max_points_per_centroid = meta["train_sample_per_list"]
    index.cp.min_points_per_centroid = 1
    index.train(codes)
    index.add(codes)
    emit(peer="faiss", event="build", seconds=time.perf_counter() - start,
         version=faiss.__version__)
    for nprobe in meta["nprobes"]:
        index.nprobe = nprobe
        for rep in range(meta["passes"]):
            start = time.perf_counter()
            _, cand = index.search(qcodes, cands)
            top = rescore(vecs, queries, cand, k)
            secs = time.perf_counter() - start
            name = save(d, "faiss-%d-%d.i32" % (nprobe, rep), top)
            emit(peer="faiss", event="point", param=nprobe, seconds=secs, file=name)


def run_hnswlib(d, meta, vecs, queries):
    import hnswlib

    n, dims, k = meta["n"], meta["dims"], meta["k"]
    start = time.perf_counter()
    index = hnswlib.Index(space="ip", dim=dims)
    index.init_index(max_elements=n, M=meta["hnsw_m"], ef_construction=meta["hnsw_ef_construction"],
                     random_seed=100)
    index.set_num_threads(1)
    index.add_items(vecs, np.arange(n), num_threads=1)
    emit(peer="hnswlib", event="build", seconds=time.perf_counter() - start,
         version=getattr(hnswlib, "__version__", "0.6.2"))
    for ef in meta["efs"]:
        index.set_ef(max(ef, k))
        for rep in range(meta["passes"]):
            start = time.perf_counter()
            labels, _ = index.knn_query(queries, k=k, num_threads=1)
            secs = time.perf_counter() - start
            name = save(d, "hnswlib-%d-%d.i32" % (ef, rep), labels.astype(np.int64))
            emit(peer="hnswlib", event="point", param=ef, seconds=secs, file=name)


def main():
    d = sys.argv[1]
    meta, vecs, codes, queries, qcodes = load(d)
    if "faiss" in meta["peers"]:
        run_faiss(d, meta, vecs, codes, queries, qcodes)
    if "hnswlib" in meta["peers"]:
        run_hnswlib(d, meta, vecs, queries)
    emit(event="done")


if __name__ == "__main__":
    main()
