package main

import _ "github.com/ferrystream/ferry/kinds" // registers every operator kind of the library
