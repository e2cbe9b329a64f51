"""PSS(R)E power-flow raw data (``.raw``), versions 32 to 35, read as data.

Source of the format: Siemens PTI, *PSS(R)E Program Operation Manual*, "Power Flow Raw Data File
Contents" (revisions 32-35). The reader keeps what a transient study needs (buses, loads with
their constant-power, -current and -admittance parts, fixed and switched shunts, generators,
branches, two- and three-winding transformers; areas and zones as names) and refuses, naming
file, line and record, everything it does not model: change cases (IC = 1), DC lines, FACTS
devices, GNE devices, induction machines, system switching devices, impedance-correction tables,
distributed generation on loads, generator step-up data in the generator record, isolated buses.
Fields left out at the end of a record take the defaults the manual documents (listed per record
below); required fields (bus numbers, impedances) must be present.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from models.psse.records import Fields, PsseError, data_part, split_record

VERSIONS = (32, 33, 34, 35)

BUS_FIELDS = ("I", "NAME", "BASKV", "IDE", "AREA", "ZONE", "OWNER", "VM", "VA")
LOAD_FIELDS = (
    "I", "ID", "STATUS", "AREA", "ZONE", "PL", "QL", "IP", "IQ", "YP", "YQ", "OWNER", "SCALE",
    "INTRPT", "DGENP", "DGENQ", "DGENM",
)  # fmt: skip
SHUNT_FIELDS = ("I", "ID", "STATUS", "GL", "BL")
GEN_FIELDS = {
    32: ("I", "ID", "PG", "QG", "QT", "QB", "VS", "IREG", "MBASE", "ZR", "ZX", "RT", "XT", "GTAP",
         "STAT", "RMPCT", "PT", "PB"),
    35: ("I", "ID", "PG", "QG", "QT", "QB", "VS", "IREG", "NREG", "MBASE", "ZR", "ZX", "RT", "XT",
         "GTAP", "STAT", "RMPCT", "PT", "PB"),
}  # fmt: skip
BRANCH_FIELDS = {
    32: ("I", "J", "CKT", "R", "X", "B", "RATEA", "RATEB", "RATEC", "GI", "BI", "GJ", "BJ", "ST"),
    34: ("I", "J", "CKT", "R", "X", "B", "NAME", *(f"RATE{k}" for k in range(1, 13)),
         "GI", "BI", "GJ", "BJ", "ST"),
}  # fmt: skip
XF_FIELDS = ("I", "J", "K", "CKT", "CW", "CZ", "CM", "MAG1", "MAG2", "NMETR", "NAME", "STAT")
XF_IMPEDANCE = ("R1-2", "X1-2", "SBASE1-2", "R2-3", "X2-3", "SBASE2-3", "R3-1", "X3-1",
                "SBASE3-1", "VMSTAR", "ANSTAR")  # fmt: skip
XF_WINDING = ("WINDV", "NOMV", "ANG")
AREA_FIELDS = ("I", "ISW", "PDES", "PTOL", "ARNAME")
ZONE_FIELDS = ("I", "ZONAME")

UNSUPPORTED = {
    "two-terminal dc line": "two-terminal DC lines",
    "vsc dc line": "VSC DC lines",
    "impedance correction table": "impedance-correction tables",
    "multi-terminal dc line": "multi-terminal DC lines",
    "facts device": "FACTS devices",
    "gne device": "GNE devices",
    "induction machine": "induction machines in the raw file",
    "system switching device": "system switching devices",
}
"""Sections whose records are refused (not modelled)."""
METADATA = ("multi-section line", "inter-area transfer", "owner", "substation")
"""Sections read past: groupings and bookkeeping with no effect on the network's equations."""


def section_order(version: int) -> tuple[str, ...]:
    """The sections of a raw file of ``version`` in file order (after the bus data)."""
    order = ["load", "fixed shunt", "generator", "branch"]
    if version >= 34:
        order.append("system switching device")
    order += [
        "transformer", "area", "two-terminal dc line", "vsc dc line", "impedance correction table",
        "multi-terminal dc line", "multi-section line", "zone", "inter-area transfer", "owner",
        "facts device", "switched shunt", "gne device",
    ]  # fmt: skip
    if version >= 33:
        order.append("induction machine")
    if version >= 34:
        order.append("substation")
    return ("bus", *order)


@dataclass(frozen=True)
class Bus:
    number: int
    name: str
    base_kv: float
    kind: int
    """IDE: 1 load (PQ), 2 generator (PV), 3 swing."""
    area: int
    zone: int
    vm: float
    va_deg: float
    line: int


@dataclass(frozen=True)
class Load:
    """Powers in MW / Mvar: constant power (pl, ql), constant current at 1 pu voltage (ip, iq;
    iq > 0 inductive) and constant admittance at 1 pu voltage (yp, yq; yq < 0 inductive)."""

    bus: int
    id: str
    pl: float
    ql: float
    ip: float
    iq: float
    yp: float
    yq: float
    line: int


@dataclass(frozen=True)
class Shunt:
    """A fixed shunt (or a switched shunt at its solved BINIT), MW / Mvar at 1 pu voltage;
    bl > 0 capacitive."""

    bus: int
    id: str
    gl: float
    bl: float
    line: int


@dataclass(frozen=True)
class Generator:
    bus: int
    id: str
    pg: float
    qg: float
    qt: float
    qb: float
    vs: float
    ireg: int
    mbase: float
    zr: float
    zx: float
    pt: float
    pb: float
    line: int


@dataclass(frozen=True)
class Branch:
    """A pi-model line, pu on the system base."""

    i: int
    j: int
    ckt: str
    r: float
    x: float
    b: float
    line: int


@dataclass(frozen=True)
class Winding:
    bus: int
    ratio: float
    """Off-nominal turns ratio in pu of the bus base voltage (CW already applied)."""
    angle_deg: float
    in_service: bool


@dataclass(frozen=True)
class Transformer:
    """Two- or three-winding transformer; impedances in pu on the system base (CZ applied),
    pairwise for three windings (1-2, 2-3, 3-1); magnetizing admittance in pu on the system base
    at the winding-1 bus (CM applied)."""

    ckt: str
    windings: tuple[Winding, ...]
    impedances: tuple[complex, ...]
    magnetizing: complex
    star_vm: float
    star_va_deg: float
    line: int


@dataclass
class RawCase:
    """A parsed raw file; powers in MW / Mvar as written, impedances converted to pu on
    ``sbase``."""

    file: str
    version: int
    sbase: float
    f_hz: float
    title: tuple[str, str]
    buses: list[Bus] = field(default_factory=list)
    loads: list[Load] = field(default_factory=list)
    shunts: list[Shunt] = field(default_factory=list)
    generators: list[Generator] = field(default_factory=list)
    branches: list[Branch] = field(default_factory=list)
    transformers: list[Transformer] = field(default_factory=list)
    areas: dict[int, str] = field(default_factory=dict)
    zones: dict[int, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class _Lines:
    """The file's lines with 1-based numbers; skips ``@!`` column-heading lines (revision 35)."""

    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self.rows = [
            (k, line) for k, line in enumerate(text.splitlines(), start=1)
            if not line.lstrip().startswith("@!")
        ]  # fmt: skip
        self.pos = 0

    def next(self, record: str) -> tuple[int, str]:
        if self.pos >= len(self.rows):
            last = self.rows[-1][0] if self.rows else 0
            raise PsseError(self.file, last, record, "the file ends inside this section")
        row = self.rows[self.pos]
        self.pos += 1
        return row

    def peek(self) -> tuple[int, str] | None:
        return self.rows[self.pos] if self.pos < len(self.rows) else None


def _fields(lines: _Lines, record: str, names: tuple[str, ...]) -> Fields | None:
    """The next record of a section, or None at the section's ``0`` terminator (or ``Q``)."""
    number, text = lines.next(record)
    try:
        values = split_record(text)
    except ValueError as exc:
        raise PsseError(lines.file, number, record, str(exc)) from None
    if not values or values[0] in ("0", "Q", "q"):
        return None
    return Fields(lines.file, number, record, names, values)


def _continuation(lines: _Lines, record: str, names: tuple[str, ...]) -> Fields:
    number, text = lines.next(record)
    try:
        values = split_record(text)
    except ValueError as exc:
        raise PsseError(lines.file, number, record, str(exc)) from None
    return Fields(lines.file, number, record, names, values)


def _header(lines: _Lines) -> tuple[int, float, float, tuple[str, str]]:
    number, text = lines.next("case identification")
    head = Fields(
        lines.file,
        number,
        "case identification",
        ("IC", "SBASE", "REV", "XFRRAT", "NXFRAT", "BASFRQ"),
        split_record(text),
    )
    if head.integer("IC", 0) != 0:
        raise head.error("field IC = 1 marks a change case; only base cases (IC = 0) are read")
    version = head.integer("REV", 33)
    if version not in VERSIONS:
        raise head.error(f"field REV = {version}: raw versions {VERSIONS} are read")
    sbase = head.number("SBASE", 100.0)
    if sbase <= 0:
        raise head.error(f"field SBASE = {sbase} must be > 0 (MVA)")
    f_hz = head.number("BASFRQ", 60.0)
    if f_hz <= 0:
        raise head.error(f"field BASFRQ = {f_hz} must be > 0 (Hz)")
    title = (lines.next("title")[1].strip(), lines.next("title")[1].strip())
    return version, sbase, f_hz, title


def _skip_system_wide(lines: _Lines) -> None:
    """Revision 35 (and some 33 files) put system-wide data before the buses."""
    row = lines.peek()
    if row is None:
        return
    first = data_part(row[1]).strip()
    starts_with_word = bool(first) and first[0].isalpha() and first[0] not in "Qq"
    if starts_with_word or ("SYSTEM-WIDE" in row[1].upper() and first.split(",")[0] == "0"):
        while True:
            number, text = lines.next("system-wide data")
            if data_part(text).strip().split(",")[0].strip() == "0":
                return


def parse_raw(text: str, file: str = "case.raw") -> RawCase:
    """Read a raw file (``text``); errors are ``PsseError`` naming ``file``, line and record."""
    lines = _Lines(file, text)
    version, sbase, f_hz, title = _header(lines)
    case = RawCase(file, version, sbase, f_hz, title)
    _skip_system_wide(lines)
    readers = {
        "bus": _read_bus, "load": _read_load, "fixed shunt": _read_shunt,
        "generator": _read_generator, "branch": _read_branch, "transformer": _read_transformer,
        "area": _read_area, "zone": _read_zone, "switched shunt": _read_switched_shunt,
    }  # fmt: skip
    for section in section_order(version):
        row = lines.peek()
        if row is None or data_part(row[1]).strip().upper() in ("Q", "'Q'"):
            break
        reader = readers.get(section)
        while True:
            if section in UNSUPPORTED:
                rec = _fields(lines, f"{section} data", ())
                if rec is not None:
                    raise rec.error(f"{UNSUPPORTED[section]} are not supported")
                break
            if reader is None:  # METADATA: read past
                rec = _fields(lines, f"{section} data", ())
                if rec is None:
                    break
                continue
            if not reader(lines, case):
                break
    _check(case)
    return case


def _read_bus(lines: _Lines, case: RawCase) -> bool:
    f = _fields(lines, "bus data", BUS_FIELDS)
    if f is None:
        return False
    number = f.integer("I")
    if not 1 <= number <= 999_997:
        raise f.error(f"field I = {number}: bus numbers are 1 to 999997")
    kind = f.integer("IDE", 1)
    if kind == 4:
        raise f.error(f"bus {number} is isolated (IDE = 4); remove it or connect it")
    if kind not in (1, 2, 3):
        raise f.error(f"field IDE = {kind} must be 1, 2, 3 or 4")
    base_kv = f.number("BASKV", 0.0)
    if base_kv < 0:
        raise f.error(f"field BASKV = {base_kv} must be >= 0 (kV)")
    vm = f.number("VM", 1.0)
    if not 0.0 < vm < 2.0:
        raise f.error(f"field VM = {vm} is not a bus voltage magnitude (pu)")
    case.buses.append(
        Bus(number, f.text("NAME"), base_kv, kind, f.integer("AREA", 1), f.integer("ZONE", 1),
            vm, f.number("VA", 0.0), f.line)
    )  # fmt: skip
    return True


def _read_load(lines: _Lines, case: RawCase) -> bool:
    f = _fields(lines, "load data", LOAD_FIELDS)
    if f is None:
        return False
    if f.integer("STATUS", 1) == 0:
        return True
    if case.version >= 34 and f.integer("DGENM", 0) != 0:
        raise f.error("distributed generation on a load (DGENM = 1) is not supported")
    values = {k: f.number(k, 0.0) for k in ("PL", "QL", "IP", "IQ", "YP", "YQ")}
    case.loads.append(Load(f.integer("I"), f.text("ID", "1"), *values.values(), f.line))
    return True


def _read_shunt(lines: _Lines, case: RawCase) -> bool:
    f = _fields(lines, "fixed shunt data", SHUNT_FIELDS)
    if f is None:
        return False
    if f.integer("STATUS", 1) != 0:
        case.shunts.append(
            Shunt(f.integer("I"), f.text("ID", "1"), f.number("GL", 0.0), f.number("BL", 0.0),
                  f.line)
        )  # fmt: skip
    return True


def _read_generator(lines: _Lines, case: RawCase) -> bool:
    f = _fields(lines, "generator data", GEN_FIELDS[35 if case.version >= 35 else 32])
    if f is None:
        return False
    if f.integer("STAT", 1) == 0:
        return True
    rt, xt, gtap = f.number("RT", 0.0), f.number("XT", 0.0), f.number("GTAP", 1.0)
    if rt != 0.0 or xt != 0.0 or gtap != 1.0:
        raise f.error(
            "a step-up transformer in the generator record (RT, XT, GTAP) is not supported: "
            "model it as a transformer record"
        )
    mbase = f.number("MBASE", case.sbase)
    if mbase <= 0:
        raise f.error(f"field MBASE = {mbase} must be > 0 (MVA)")
    case.generators.append(
        Generator(f.integer("I"), f.text("ID", "1"), f.number("PG", 0.0), f.number("QG", 0.0),
                  f.number("QT", 9999.0), f.number("QB", -9999.0), f.number("VS", 1.0),
                  f.integer("IREG", 0), mbase, f.number("ZR", 0.0), f.number("ZX", 1.0),
                  f.number("PT", 9999.0), f.number("PB", -9999.0), f.line)
    )  # fmt: skip
    return True


def _read_branch(lines: _Lines, case: RawCase) -> bool:
    f = _fields(lines, "branch data", BRANCH_FIELDS[34 if case.version >= 34 else 32])
    if f is None:
        return False
    if f.integer("ST", 1) == 0:
        case.notes.append(f"{case.file}, line {f.line}: branch out of service (ST = 0), left out")
        return True
    r, x = f.number("R", 0.0), f.number("X")
    if r == 0.0 and x == 0.0:
        raise f.error("a branch with R = X = 0 (a jumper) is not supported")
    if any(f.number(k, 0.0) != 0.0 for k in ("GI", "BI", "GJ", "BJ")):
        raise f.error("line-end shunts (GI, BI, GJ, BJ) are not supported yet")
    i, j = f.integer("I"), abs(f.integer("J"))
    case.branches.append(Branch(i, j, f.text("CKT", "1"), r, x, f.number("B", 0.0), f.line))
    return True


def _winding_ratio(f: Fields, cw: int, base_kv: float, k: int) -> tuple[float, float]:
    windv = f.number("WINDV", 1.0 if cw != 2 else base_kv)
    nomv = f.number("NOMV", 0.0)
    angle = f.number("ANG", 0.0)
    if cw == 1:
        ratio = windv
    elif base_kv <= 0:
        raise f.error(f"winding {k}: CW = {cw} needs the bus base voltage BASKV > 0")
    elif cw == 2:
        ratio = windv / base_kv
    else:
        ratio = windv * (nomv if nomv > 0 else base_kv) / base_kv
    if ratio <= 0:
        raise f.error(f"winding {k}: the turns ratio must be > 0 (WINDV = {windv})")
    return ratio, angle


def _read_transformer(lines: _Lines, case: RawCase) -> bool:
    head = _fields(lines, "transformer data", XF_FIELDS)
    if head is None:
        return False
    buses = [head.integer("I"), abs(head.integer("J")), abs(head.integer("K", 0))]
    three = buses[2] != 0
    cw, cz, cm = head.integer("CW", 1), head.integer("CZ", 1), head.integer("CM", 1)
    for name, value in (("CW", cw), ("CZ", cz), ("CM", cm)):
        if value not in ((1, 2, 3) if name != "CM" else (1, 2)):
            raise head.error(f"field {name} = {value} is not a valid code")
    z = _continuation(lines, "transformer data", XF_IMPEDANCE)
    windings_f = [
        _continuation(lines, "transformer data", XF_WINDING) for _ in range(3 if three else 2)
    ]
    status = head.integer("STAT", 1)
    if status == 0:
        case.notes.append(f"{case.file}, line {head.line}: transformer out of service, left out")
        return True
    base_kv = {b.number: b.base_kv for b in case.buses}
    for b in buses[: 3 if three else 2]:
        if b not in base_kv:
            raise head.error(f"bus {b} is not in the bus data")
    pairs = (
        ("R1-2", "X1-2", "SBASE1-2"),
        ("R2-3", "X2-3", "SBASE2-3"),
        ("R3-1", "X3-1", "SBASE3-1"),
    )
    impedances = []
    for k, (rn, xn, sn) in enumerate(pairs[: 3 if three else 1]):
        r, x = z.number(rn, 0.0), z.number(xn)
        sb = z.number(sn, case.sbase)
        if sb <= 0:
            raise z.error(f"field {sn} = {sb} must be > 0 (MVA)")
        if cz == 3:  # R: load loss in W, X: |Z| in pu on the winding base
            r = r / (1e6 * sb)
            if x < r:
                raise z.error(f"field {xn}: |Z| = {x} is below the resistance {r} (CZ = 3)")
            x = (x * x - r * r) ** 0.5
        if cz in (2, 3):
            nomv = windings_f[k].number("NOMV", 0.0)
            vbase = base_kv[buses[k]]
            scale = (nomv / vbase) ** 2 if nomv > 0 and vbase > 0 else 1.0
            r, x = r * case.sbase / sb * scale, x * case.sbase / sb * scale
        if r == 0.0 and x == 0.0:
            raise z.error(f"fields {rn}, {xn}: a transformer with zero impedance is not supported")
        impedances.append(complex(r, x))
    mag1, mag2 = head.number("MAG1", 0.0), head.number("MAG2", 0.0)
    if cm == 2:  # MAG1: no-load loss in W; MAG2: exciting current in pu on SBASE1-2
        sb = z.number("SBASE1-2", case.sbase)
        g = mag1 / (1e6 * case.sbase)
        y = mag2 * sb / case.sbase
        magnetizing = complex(g, -(max(y * y - g * g, 0.0) ** 0.5))
    else:
        magnetizing = complex(mag1, mag2)
    out_winding = {2: 1, 3: 2, 4: 0}.get(status) if three else None
    windings = []
    for k, wf in enumerate(windings_f):
        ratio, angle = _winding_ratio(wf, cw, base_kv[buses[k]], k + 1)
        windings.append(Winding(buses[k], ratio, angle, k != out_winding))
    case.transformers.append(
        Transformer(head.text("CKT", "1"), tuple(windings), tuple(impedances), magnetizing,
                    z.number("VMSTAR", 1.0), z.number("ANSTAR", 0.0), head.line)
    )  # fmt: skip
    return True


def _read_area(lines: _Lines, case: RawCase) -> bool:
    f = _fields(lines, "area data", AREA_FIELDS)
    if f is None:
        return False
    case.areas[f.integer("I")] = f.text("ARNAME")
    return True


def _read_zone(lines: _Lines, case: RawCase) -> bool:
    f = _fields(lines, "zone data", ZONE_FIELDS)
    if f is None:
        return False
    case.zones[f.integer("I")] = f.text("ZONAME")
    return True


SWITCHED_FIELDS = {
    32: ("I", "MODSW", "ADJM", "STAT", "VSWHI", "VSWLO", "SWREM", "RMPCT", "RMIDNT", "BINIT"),
    34: ("I", "MODSW", "ADJM", "STAT", "VSWHI", "VSWLO", "SWREG", "NREG", "RMPCT", "RMIDNT",
         "BINIT"),
    35: ("I", "ID", "MODSW", "ADJM", "STAT", "VSWHI", "VSWLO", "SWREG", "NREG", "RMPCT", "RMIDNT",
         "BINIT"),
}  # fmt: skip
"""Leading fields of a switched-shunt record up to BINIT (the solved susceptance, Mvar at 1 pu)
by revision (32 and 33 share one layout)."""


def _read_switched_shunt(lines: _Lines, case: RawCase) -> bool:
    names = SWITCHED_FIELDS[32 if case.version <= 33 else case.version]
    f = _fields(lines, "switched shunt data", names)
    if f is None:
        return False
    if f.integer("STAT", 1) != 0:
        binit = f.number("BINIT", 0.0)
        case.shunts.append(Shunt(f.integer("I"), f.text("ID", "SW"), 0.0, binit, f.line))
        case.notes.append(
            f"{case.file}, line {f.line}: switched shunt at bus {f.integer('I')} held at its "
            f"solved BINIT = {binit} Mvar (as PSS/E holds switched shunts in dynamics without a "
            "SWSHNT model)"
        )
    return True


def _check(case: RawCase) -> None:
    numbers = [b.number for b in case.buses]
    if not numbers:
        raise PsseError(case.file, 0, "bus data", "the case has no buses")
    seen: dict[int, int] = {}
    for b in case.buses:
        if b.number in seen:
            raise PsseError(
                case.file,
                b.line,
                "bus data",
                f"bus {b.number} is defined twice (first on line {seen[b.number]})",
            )
        seen[b.number] = b.line
    known = set(numbers)
    for record, items, attrs in (
        ("load data", case.loads, ("bus",)),
        ("fixed shunt data", case.shunts, ("bus",)),
        ("generator data", case.generators, ("bus",)),
        ("branch data", case.branches, ("i", "j")),
    ):
        for item in items:
            for attr in attrs:
                if getattr(item, attr) not in known:
                    raise PsseError(
                        case.file,
                        item.line,
                        record,
                        f"bus {getattr(item, attr)} is not in the bus data",
                    )
    if not any(b.kind == 3 for b in case.buses):
        raise PsseError(case.file, 0, "bus data", "no swing bus (IDE = 3)")
    gen_buses = {g.bus for g in case.generators}
    for b in case.buses:
        if b.kind == 3 and b.number not in gen_buses:
            raise PsseError(
                case.file, b.line, "bus data", f"swing bus {b.number} has no in-service generator"
            )
