"""A user's check of their own implementation: one pipeline (`pipeline`: load the
subject, resolve the contract, guide, run the engines, rank, report) over targets as
plug-ins (`target`; the CPU manager's in `manager`, the GPU side's in `gpu`), the
setup of user code (`setup`, `guide`), the pytest fixture (`plugin`) and trace
replay (`replay`).
"""
