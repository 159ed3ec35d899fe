// maxVectorWords bounds the start vector airlock_entryvec copies (entryvec.go):
// a longer one (argc, or the whole vector in words) is left as it is.
#define maxVectorWords 8192
