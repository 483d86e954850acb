package db

// DecodeArcReactorFacts exposes decodeArcReactorFacts to package db_test.
var DecodeArcReactorFacts = decodeArcReactorFacts
