//go:build scale

package main

import "testing"

// TestScaleStartWithoutIndexAnswersBeforeTheRebuild: on a catalog of
// 3,000 bundles (15,000 documents) without its index, initialize is
// answered before the background rebuild is done (before, it answered
// nothing until the rebuild was done).
func TestScaleStartWithoutIndexAnswersBeforeTheRebuild(t *testing.T) {
	startWithoutIndex(t, 3000, true)
}
