// Package seams holds Strata's cross-package tests: promises that only
// hold where packages meet — an agent's reply never waiting for a fold, two
// managers sharing one PostgreSQL database, a delete in the middle of a
// fold, the catalogue following the manager — are exercised here through
// agent, memory, catalog and the real stores together. It has no code of
// its own.
package seams
