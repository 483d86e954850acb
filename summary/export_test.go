package summary

// NarrativeSentences exposes sentences to the tests.
var NarrativeSentences = sentences
