package db

// AddVectorColumn exposes addVectorColumn to the catalogue's tests, which
// run the vector mode against a stand-in for pgvector when the server lacks
// it.
var AddVectorColumn = addVectorColumn
