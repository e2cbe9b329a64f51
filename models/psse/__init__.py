"""PSS(R)E data: ``.raw`` power-flow cases (versions 32-35) and ``.dyr`` dynamic data, parsed as
data with every refusal naming the file, line and record (``PsseError``)."""
