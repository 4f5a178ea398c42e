package routing

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestDetectWeatherPhrases pins weather detection on phrases that take
// each path: leading and trailing timeframes, possessive and "in/for/at"
// locations, and the stops between them.
func TestDetectWeatherPhrases(t *testing.T) {
	for _, c := range []struct {
		text string
		want weather
	}{
		{"no forecast here", weather{requested: false, location: "", timeframe: ""}},
		{"weather", weather{requested: true, location: "", timeframe: "today"}},
		{"send the weather", weather{requested: true, location: "", timeframe: "today"}},
		{"tomorrow's weather in boston", weather{requested: true, location: "boston", timeframe: "tomorrow"}},
		{"tomorrow weather", weather{requested: true, location: "", timeframe: "tomorrow"}},
		{"next week weather for paris, france please", weather{requested: true, location: "paris, france", timeframe: "next week"}},
		{"boston's weather", weather{requested: true, location: "boston", timeframe: "today"}},
		{"new york city's weather tomorrow", weather{requested: true, location: "new york city", timeframe: "tomorrow"}},
		{"today boston's weather", weather{requested: true, location: "boston", timeframe: "today"}},
		{"email bob. boston's weather", weather{requested: true, location: "boston", timeframe: "today"}},
		{"the weather forecast tomorrow in san francisco", weather{requested: true, location: "san francisco", timeframe: "tomorrow"}},
		{"weather forecast. in boston", weather{requested: true, location: "", timeframe: "today"}},
		{"weather in boston tomorrow", weather{requested: true, location: "boston", timeframe: "tomorrow"}},
		{"weather in boston. tomorrow", weather{requested: true, location: "boston", timeframe: "today"}},
		{"weather at the office's lobby today", weather{requested: true, location: "the office", timeframe: "today"}},
		{"weather for a b c d e f g h", weather{requested: true, location: "a b c d e f", timeframe: "today"}},
		{"weather in", weather{requested: true, location: "", timeframe: "today"}},
		{"weather in to", weather{requested: true, location: "", timeframe: "today"}},
		{"weather tomorrow for austin, tx and send", weather{requested: true, location: "austin, tx", timeframe: "tomorrow"}},
		{"weather this weekend in lisbon", weather{requested: true, location: "lisbon", timeframe: "this weekend"}},
		{"weather, in boston", weather{requested: true, location: "boston", timeframe: "today"}},
		{"weather in x123456789x123456789x123456789x123456789x123456789x123456789x123456789", weather{requested: true, location: "x123456789x123456789x123456789x123456789x123456789x123456789", timeframe: "today"}},
		{"my's weather", weather{requested: true, location: "", timeframe: "today"}},
		{"weekend's weather", weather{requested: true, location: "weekend", timeframe: "today"}},
		{"rio's, weather", weather{requested: true, location: "rio", timeframe: "today"}},
		{"next week boston's weather", weather{requested: true, location: "boston", timeframe: "today"}},
		{"this week's weather at noon", weather{requested: true, location: "noon", timeframe: "this week"}},
		{"weather\ttonight in oslo", weather{requested: true, location: "oslo", timeframe: "tonight"}},
	} {
		assert.Equal(t, c.want, detectWeather(c.text), c.text)
	}
}
