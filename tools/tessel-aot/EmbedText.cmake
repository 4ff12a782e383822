# Writes the file IN as a C++ raw string literal to OUT.
file(READ ${IN} text)
file(WRITE ${OUT} "R\"tessel_spec(${text})tessel_spec\"\n")
