package nsjail

// AfterAheadFilter is afterAheadFilter, for the tests.
var AfterAheadFilter = afterAheadFilter
