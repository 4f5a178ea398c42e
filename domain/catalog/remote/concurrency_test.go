package remote

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Lists and installs of several cookbooks run at once over the shared
// client; each install lands exactly once with its own lock record.
func TestConcurrentListAndInstall(t *testing.T) {
	e := newEnv(t)
	r := newRemote(t)
	bundles := map[string][]byte{}
	for i := range 8 {
		bundles[fmt.Sprintf("cb%d@1.0.0", i)] = bundleJSON(fmt.Sprintf("cb%d", i), "1.0.0")
	}
	publish(r, true, bundles)
	e.addSource(t, SourceInput{SourceID: "s", IndexURL: r.URL + "/index.json"})

	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 8 {
		wg.Add(2)
		go func(i int) {
			defer wg.Done()
			_, err := e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: fmt.Sprintf("cb%d", i)})
			errs <- err
		}(i)
		go func() {
			defer wg.Done()
			_, err := e.svc.List(t.Context(), "s", "")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Len(t, e.cat.stored(t), 8)
	for i := range 8 {
		lock, err := e.svc.Lock(fmt.Sprintf("cb%d", i), "1.0.0")
		require.NoError(t, err)
		require.NotNil(t, lock)
		assert.True(t, lock.Verified)
	}
}
