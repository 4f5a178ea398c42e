package gate

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests run in synctest bubbles: synctest.Wait returns once every
// goroutine of the test is blocked, so "still waiting" is observed without
// sleeping, and the gate's timers run on the bubble's fake clock.

func TestPauseWaitsForCallsInFlightAndHoldsNewOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Gate
		leave, err := g.Enter(context.Background())
		require.NoError(t, err)

		paused := make(chan func(), 1)
		go func() {
			resume, err := g.Pause(context.Background(), 5*time.Second)
			assert.NoError(t, err)
			paused <- resume
		}()
		synctest.Wait()
		select {
		case <-paused:
			t.Fatal("the pause did not wait for the call in flight")
		default:
		}
		leave()
		resume := <-paused

		var entered atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			l, err := g.Enter(context.Background())
			assert.NoError(t, err)
			entered.Store(true)
			l()
		}()
		synctest.Wait()
		assert.False(t, entered.Load(), "a call arriving during the pause is held")
		resume()
		<-done
		assert.True(t, entered.Load(), "the held call goes on after the pause")
		assert.Zero(t, g.InFlight())
	})
}

func TestPauseGivesUpAndChangesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Gate
		leave, err := g.Enter(context.Background())
		require.NoError(t, err)
		defer leave()
		_, err = g.Pause(context.Background(), 30*time.Millisecond)
		require.ErrorIs(t, err, ErrBusy)
		assert.Contains(t, err.Error(), "1 call(s)")
		l2, err := g.Enter(context.Background())
		require.NoError(t, err, "the gate is open again after a failed pause")
		l2()
	})
}

func TestHeldCallGivesUpWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Gate
		resume, err := g.Pause(context.Background(), time.Second)
		require.NoError(t, err)
		defer resume()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		_, err = g.Enter(ctx)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestCloseDrainsThenRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Gate
		leave, err := g.Enter(context.Background())
		require.NoError(t, err)
		go func() {
			time.Sleep(30 * time.Millisecond)
			leave()
		}()
		start := time.Now()
		assert.Equal(t, 0, g.Close(5*time.Second), "the call finished within the grace")
		assert.Equal(t, 30*time.Millisecond, time.Since(start), "Close returned when the call left")
		_, err = g.Enter(context.Background())
		assert.True(t, errors.Is(err, ErrClosed))
	})
}

func TestCloseWakesCallsHeldByAPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Gate
		_, err := g.Pause(context.Background(), time.Second)
		require.NoError(t, err)
		got := make(chan error, 1)
		go func() {
			_, err := g.Enter(context.Background())
			got <- err
		}()
		synctest.Wait()
		g.Close(time.Second)
		select {
		case err := <-got:
			assert.ErrorIs(t, err, ErrClosed, "a held call never started: it is told so")
		case <-time.After(5 * time.Second):
			t.Fatal("the held call was not woken")
		}
	})
}

func TestCloseReportsCallsCutOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Gate
		leave, err := g.Enter(context.Background())
		require.NoError(t, err)
		defer leave()
		assert.Equal(t, 1, g.Close(20*time.Millisecond))
	})
}
