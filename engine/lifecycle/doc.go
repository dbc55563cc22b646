// Package lifecycle keeps the segment ownership protocol (docs/engine.md,
// rules L01 to L11): every seg_<ID>.* file set has at least
// one owner, and files are deleted only when no owner holds their ID.
//
// The three owners are:
//
//   - metadata: IDs referenced by the published metadata.json generation
//     (Manager.Publish installs a new live set);
//   - active operations: IDs claimed by an indexing flush, merge, reorder or
//     mask write (Manager.Claim for new outputs, Manager.ClaimExisting for
//     rewrite sources), released after the next owner is installed;
//   - the tracker: reader reference counts (Manager.Ref/Unref) plus the set
//     of retired IDs whose deletion is deferred until the last reader drops.
//
// One function, Manager.deleteIfUnowned, removes files; it is reached from
// retirement, abandonment and the orphan sweep, and checks all three owners
// under the manager's lock before it deletes anything (L02).
package lifecycle
