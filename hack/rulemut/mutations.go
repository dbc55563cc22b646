package main

import "slices"

// mutations lists, per rule of the rule table in docs/engine.md, one or
// more realistic ways a careless change would break it, and the tests that
// must catch it: one list per family of rules (mutations_<family>.go), in
// the order of the table.
var mutations = slices.Concat(
	ownershipMutations,
	commitMutations,
	shutdownMutations,
	deletionMutations,
	quarantineMutations,
	doctorMutations,
	maintenanceMutations,
	followerMutations,
)
