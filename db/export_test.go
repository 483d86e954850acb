package db

// TailSQL exposes the Tail query to the external tests, which inspect its
// plan.
const TailSQL = tailSQL
