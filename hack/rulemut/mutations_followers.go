package main

// followerMutations break the rules Fxx (read followers).
var followerMutations = []Mutation{
	{
		Rule: "F01", Desc: "a hold's time to live never ends it: a follower that died keeps retired files on the leader forever",
		Edits: []Edit{{File: "engine/replication/hold.go",
			From: `h.timer = time.AfterFunc(hs.ttl, func() { hs.end(id) })`,
			To:   `h.timer = time.AfterFunc(hs.ttl, func() {})`}},
		Pkg: "./engine/replication", Run: "^TestF01_",
	},
	{
		Rule: "F02", Desc: "a follower downloads into IDs it has not claimed: the orphan sweep may take a partial copy",
		Edits: []Edit{{File: "engine/index/replica.go",
			From: `claims, err := idx.mgr.ClaimIncoming("replica", ids...)`,
			To:   `claims, err := idx.mgr.ClaimIncoming("replica")`}},
		Pkg: "./engine/index", Run: "^TestF02_",
	},
	{
		Rule: "F03", Desc: "a new segment's files are published after the cheap open only, without the full validation",
		Edits: []Edit{{File: "engine/index/replica.go",
			From: `if err := segment.Validate(ctx, idx.fs, idx.dir, in.next.Schema, s.Info); err != nil {`,
			To:   `if err := ctx.Err(); err != nil {`}},
		Pkg: "./engine/index", Run: "^TestF03_",
	},
	{
		Rule: "F03", Desc: "the downloaded files are not synced with the metadata save: a crash image names empty files",
		Edits: []Edit{{File: "engine/index/replica.go",
			From: `unsynced: unsynced,`,
			To:   `unsynced: nil,`}, {File: "engine/index/replica.go",
			From: `started:  started,`,
			To:   `started:  nil,`}},
		Pkg: "./engine/index", Run: "^TestF03_",
	},
	{
		Rule: "F04", Desc: "the follower numbers the copied generation itself instead of keeping the leader's",
		Edits: []Edit{{File: "engine/index/replica.go",
			From: `next := in.next.Clone()`,
			To: `next := in.next.Clone()
				next.Generation = idx.Metadata().Generation + 1`}},
		Pkg: "./engine/index", Run: "^TestF04_",
	},
	{
		Rule: "F05", Desc: "the read-only guard is dropped from the write routes of a follower",
		Edits: []Edit{{File: "engine/server/replication.go",
			From: `if s.follower != nil {`,
			To:   `if false && s.follower != nil {`}},
		Pkg: "./engine/server", Run: "^TestF05_",
	},
}
