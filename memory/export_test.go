package memory

// WithClock sets the manager's clock (every engine wait, cool-downs, fact
// timestamps) for the
// tests of this package; it is not part of the API.
var WithClock = withClock
