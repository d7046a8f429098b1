"""The attention benchmark's scenario, shipped so that ``prism bench
attention`` runs from a wheel: seeded fixtures (:mod:`.fixtures`), a real
agent session per variant scored request by request (:mod:`.scenario`),
Prism's own variants and their summary (:mod:`.runner`), and the report
(:mod:`.terminal`). ``python -m benches.attention`` adds the peers and the
hindsight optimum from the source tree.
"""
